-- worker_heartbeat: insert or renew a live worker's row, expiring ttl_seconds from now, with
-- its demand per queue (as queue_demand counts it; 0 while draining); rows of other workers
-- that expired go in the same script.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     id, host, pid, queues (JSON list), slots, ttl_seconds, draining ('1' or '0'),
--          demand bound (QUEUE_DEMAND_ROWS), limits (JSON: shed and refused counts per job
--          name since the worker started), queue names...
-- Writes B:worker:<w>, B:workers (and what queue_demand writes).
-- Answers 1.
local id = ARGV[1]
local now = now_us()
local expired = redis.call('ZRANGEBYSCORE', B .. ':workers', '-inf', fmt(now))
for _, other in ipairs(expired) do
    if other ~= id then
        redis.call('DEL', B .. ':worker:' .. other)
        redis.call('ZREM', B .. ':workers', other)
    end
end
local parts = {}
for i = 10, #ARGV do
    local ready = 0
    if ARGV[7] ~= '1' then ready = demand(ARGV[i], now, tonumber(ARGV[8])) end
    parts[#parts + 1] = cjson.encode(ARGV[i]) .. ':' .. ready
end
local k = B .. ':worker:' .. id
local expires = now + us(ARGV[6])
redis.call('HSETNX', k, 'started_at', fmt(now))
redis.call('HSET', k, 'host', ARGV[2], 'pid', ARGV[3], 'queues', ARGV[4], 'slots', ARGV[5],
    'demand', '{' .. table.concat(parts, ',') .. '}', 'heartbeat_at', fmt(now),
    'expires_at', fmt(expires), 'limits', ARGV[9])
redis.call('ZADD', B .. ':workers', expires, id)
return 1
