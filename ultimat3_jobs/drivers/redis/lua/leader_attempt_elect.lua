-- leader_attempt_elect: take the lease when it is free or expired, or renew it for its holder;
-- the epoch moves when the holder changes.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     name, holder, ttl_seconds
-- Writes B:leader:<l>.
-- Answers {epoch, expires_at, now}, or nil when another holder's lease is live.
local k = B .. ':leader:' .. ARGV[1]
local holder = ARGV[2]
local now = now_us()
local r = redis.call('HMGET', k, 'holder', 'epoch', 'expires_at')
local epoch = 1
if r[1] then
    if r[1] ~= holder and tonumber(r[3]) >= now then return nil end
    epoch = tonumber(r[2])
    if r[1] ~= holder then epoch = epoch + 1 end
end
local expires = now + math.floor(tonumber(ARGV[3]) * 1000000 + 0.5)
redis.call('HSET', k, 'holder', holder, 'epoch', epoch, 'expires_at', fmt(expires))
return {epoch, fmt(expires), fmt(now)}
