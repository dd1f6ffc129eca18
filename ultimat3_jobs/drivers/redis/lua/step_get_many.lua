-- step_get_many: every stored step of a job, read once per attempt (steps.sql: step_get_many).
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     id
-- Reads B:steps:<id> (gone with its job, so a job that is gone has none).
-- Answers each step's JSON text; the driver orders them by seq, then name.
return redis.call('HVALS', skey(ARGV[1]))
