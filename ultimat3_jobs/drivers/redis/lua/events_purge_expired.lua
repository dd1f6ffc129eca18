-- events_purge_expired: delete up to `limit` events whose expiry Redis TIME (or the purge
-- pass's cutoff, when given) has reached, oldest expiry first, from every index that lists them.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     limit, before ('' for Redis TIME, else '=' and microseconds)
-- Writes B:event_expiry, B:event:<eid>, B:events:<e>.
-- Answers how many it deleted.
local cutoff = opt(ARGV[2]) or fmt(now_us())
local doomed = redis.call('ZRANGEBYSCORE', B .. ':event_expiry', '-inf', cutoff,
    'LIMIT', 0, tonumber(ARGV[1]))
for _, eid in ipairs(doomed) do
    local event = redis.call('HMGET', B .. ':event:' .. eid, 'name', 'key')
    if event[1] then
        redis.call('ZREM', B .. ':events:' .. live_field(event[1], event[2]), eid)
    end
    redis.call('DEL', B .. ':event:' .. eid)
    redis.call('ZREM', B .. ':event_expiry', eid)
end
return #doomed
