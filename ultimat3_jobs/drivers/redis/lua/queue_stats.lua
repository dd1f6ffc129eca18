-- queue_stats: per queue and state, how many jobs. Queued and running are exact (queued with
-- its due count and the run_at of its oldest due job); finished states are counted up to
-- `limit` jobs per job name and state, with whether the count reached it.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     limit
-- Reads B:queues, B:queued:<q>, B:running, B:names, B:done:<s>:<n>, B:pauses.
-- Answers {now, then per row: queue state jobs oldest_due ready capped (1 or 0)}.
local limit = tonumber(ARGV[1])
local now = now_us()
local rows = {fmt(now)}
for _, queue in ipairs(redis.call('SMEMBERS', B .. ':queues')) do
    local q = B .. ':queued:' .. queue
    local jobs = redis.call('ZCARD', q)
    if jobs > 0 then
        local due = redis.call('ZCOUNT', q, '-inf', fmt(now))
        local oldest = false
        if due > 0 then oldest = redis.call('ZRANGE', q, 0, 0, 'WITHSCORES')[2] end
        local ready = due
        if is_paused('queue', queue) then ready = 0 end
        rows[#rows + 1] = {queue, 'queued', jobs, oldest, ready, 0}
    end
end
local running = {}
for _, id in ipairs(redis.call('ZRANGE', B .. ':running', 0, -1)) do
    local queue = redis.call('HGET', jkey(id), 'queue')
    running[queue] = (running[queue] or 0) + 1
end
for queue, jobs in pairs(running) do rows[#rows + 1] = {queue, 'running', jobs, false, 0, 0} end
for _, name in ipairs(redis.call('SMEMBERS', B .. ':names')) do
    for _, state in ipairs({'completed', 'failed', 'cancelled'}) do
        local ids = redis.call('ZRANGE', B .. ':done:' .. state .. ':' .. name, 0, limit - 1)
        local capped = #ids >= limit and 1 or 0
        local per = {}
        for _, id in ipairs(ids) do
            local queue = redis.call('HGET', jkey(id), 'queue')
            per[queue] = (per[queue] or 0) + 1
        end
        for queue, jobs in pairs(per) do rows[#rows + 1] = {queue, state, jobs, false, 0, capped} end
    end
end
return rows
