-- leader_resign: a stopping leader lets its lease go at once.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     name, holder
-- Writes B:leader:<l>.
-- Answers 1 when the holder had the lease, else 0.
local k = B .. ':leader:' .. ARGV[1]
if redis.call('HGET', k, 'holder') ~= ARGV[2] then return 0 end
redis.call('HSET', k, 'expires_at', fmt(now_us() - 1000000))
return 1
