-- event_send: store an event and, in the same script, end every wait on it: each step waiting
-- on that event and key since at or before now (B:waits) is done with the payload, and its
-- job, when queued, is due now; the queue of each such job is woken once.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     name, key ('' for none), payload (JSON text), tenant ('' or '=' tenant),
--          ttl_seconds
-- Writes B:event_seq, B:event:<eid>, B:events:<e>, B:event_expiry, B:waits:<e>,
-- B:steps:<id>, B:job:<id> and its queue's sets; publishes on B:wake.
-- Answers the number of waits it ended.
local name, key, payload, tenant = ARGV[1], ARGV[2], ARGV[3], opt(ARGV[4])
local now = now_us()
local eid = string.format('%015d', redis.call('INCR', B .. ':event_seq'))
local field = live_field(name, key)
local expires = now + us(ARGV[5])
redis.call('HSET', B .. ':event:' .. eid, 'name', name, 'key', key, 'payload', payload,
    'created_at', fmt(now), 'expires_at', fmt(expires))
if tenant then redis.call('HSET', B .. ':event:' .. eid, 'tenant', tenant) end
redis.call('ZADD', B .. ':events:' .. field, now, eid)
redis.call('ZADD', B .. ':event_expiry', expires, eid)
local waits = B .. ':waits:' .. field
local queues = {}
local ended = 0
for _, member in ipairs(redis.call('ZRANGEBYSCORE', waits, '-inf', fmt(now))) do
    local tab = string.find(member, '\t', 1, true)
    local id = string.sub(member, 1, tab - 1)
    local step = step_load(id, string.sub(member, tab + 1))
    if step ~= nil and step.status == 'waiting' then
        step.status = 'done'
        step.output = payload
        step.updated_at = fmt(now)
        step_save(id, step)
        ended = ended + 1
        local row = load(id)
        if row ~= nil and row.state == 'queued' then
            if row.run_at > now then
                redis.call('HSET', jkey(id), 'run_at', fmt(now))
                place(id, row.queue, row.name, row.priority, now, now)
            end
            queues[row.queue] = true
        end
    else
        redis.call('ZREM', waits, member)
    end
end
wake(queues)
return ended
