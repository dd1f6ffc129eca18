-- step_shift (test support): move stored times as the PostgreSQL tests do with an UPDATE,
-- keeping the indexes in step: 'events' moves every event's created_at, 'expiry' every
-- event's expires_at, 'wait' one step's wait_since and wait_until.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     what ('events', 'expiry' or 'wait'), microseconds, then for 'wait': id, step name
-- Writes B:event:<eid>, B:events:<e>, B:event_expiry; or B:steps:<id>, B:waits:<e>.
-- Answers how many it moved.
local what, by = ARGV[1], tonumber(ARGV[2])
if what == 'wait' then
    local id = ARGV[3]
    local step = step_load(id, ARGV[4])
    if step == nil or step.wait_since == nil then return 0 end
    step.wait_since = fmt(tonumber(step.wait_since) + by)
    step.wait_until = fmt(tonumber(step.wait_until) + by)
    step_save(id, step)
    return 1
end
local ids = redis.call('ZRANGE', B .. ':event_expiry', 0, -1)
for _, eid in ipairs(ids) do
    local ekey = B .. ':event:' .. eid
    local event = redis.call('HMGET', ekey, 'name', 'key', 'created_at', 'expires_at')
    if what == 'events' then
        local at = fmt(tonumber(event[3]) + by)
        redis.call('HSET', ekey, 'created_at', at)
        redis.call('ZADD', B .. ':events:' .. live_field(event[1], event[2]), at, eid)
    else
        local at = fmt(tonumber(event[4]) + by)
        redis.call('HSET', ekey, 'expires_at', at)
        redis.call('ZADD', B .. ':event_expiry', at, eid)
    end
end
return #ids
