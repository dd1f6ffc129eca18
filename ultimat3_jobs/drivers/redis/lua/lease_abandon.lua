-- lease_abandon: an attempt that never started lets its concurrency slots go, fenced by its
-- claim token; its rate stamps stay spent.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     job_id, claim_token
-- Writes B:lease:<k>, B:slots:<id>.
-- Answers how many slots went.
return slots_free(ARGV[1], ARGV[2])
