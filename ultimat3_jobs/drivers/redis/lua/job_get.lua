-- job_get: one job's fields, for an operator or a result reader.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     id
-- Reads B:job:<id>.
-- Answers the hash as field, value pairs (empty for a missing job).
return redis.call('HGETALL', jkey(ARGV[1]))
