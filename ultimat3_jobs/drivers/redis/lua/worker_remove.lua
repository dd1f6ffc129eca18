-- worker_remove: forget a worker that stopped.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     id
-- Writes B:worker:<w>, B:workers.
-- Answers 1 when it had a row, else 0.
redis.call('ZREM', B .. ':workers', ARGV[1])
return redis.call('DEL', B .. ':worker:' .. ARGV[1])
