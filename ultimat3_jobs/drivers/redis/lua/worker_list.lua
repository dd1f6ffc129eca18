-- worker_list: the workers whose row has not expired.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     none
-- Reads B:workers, B:worker:<w>.
-- Answers per worker: id host pid queues slots demand started_at heartbeat_at expires_at
-- limits.
local ids = redis.call('ZRANGEBYSCORE', B .. ':workers', '(' .. fmt(now_us()), '+inf')
local answer = {}
for _, id in ipairs(ids) do
    local r = redis.call('HMGET', B .. ':worker:' .. id, 'host', 'pid', 'queues', 'slots',
        'demand', 'started_at', 'heartbeat_at', 'expires_at', 'limits')
    if r[1] then
        answer[#answer + 1] = {id, r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9] or '{}'}
    end
end
return answer
