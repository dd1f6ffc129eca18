-- pause_remove: lift a pause; a resumed job name's held jobs go back to their queues.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     scope, target
-- Writes B:pauses, B:pause_order, B:paused_jobs, B:held:<n>, B:ready:<q>.
-- Answers 1 when there was a pause, else 0.
local scope, target = ARGV[1], ARGV[2]
local field = scope .. '\t' .. target
if redis.call('HDEL', B .. ':pauses', field) == 0 then return 0 end
redis.call('ZREM', B .. ':pause_order', field)
if scope == 'job' then
    redis.call('SREM', B .. ':paused_jobs', target)
    local now = now_us()
    local held = redis.call('SMEMBERS', B .. ':held:' .. target)
    redis.call('DEL', B .. ':held:' .. target)
    for _, id in ipairs(held) do
        local row = load(id)
        if row and row.state == 'queued' then
            place(id, row.queue, row.name, row.priority, row.run_at, now)
        end
    end
end
return 1
