-- job_progress: store a running attempt's progress, fenced.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     id, claim_token, progress (JSON text)
-- Writes B:job:<id>.
-- Answers 1 when it landed, else 0.
if owned(ARGV[1], ARGV[2]) == nil then return 0 end
redis.call('HSET', jkey(ARGV[1]), 'progress', ARGV[3])
return 1
