-- job_claim: claim up to `limit` due jobs from the named queues, highest priority first, then
-- earliest run_at; paused queues and the jobs of paused names are skipped.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     worker_id, lease_seconds, limit, n (queues), queue * n, claim token * limit
-- Reads B:pauses, B:promoted, B:queued:<q>, B:ready:<q>; writes B:job:<id>, B:ready:<q>,
-- B:queued:<q>, B:held:<n>, B:running.
-- Answers per claimed job: id name queue input attempt max_attempts claim_token priority
-- tenant lease_expires_at created_at traceparent.
local worker_id, lease_default = ARGV[1], tonumber(ARGV[2])
local limit, n = tonumber(ARGV[3]), tonumber(ARGV[4])
local now = now_us()
local heads = {}
for i = 1, n do
    local queue = ARGV[4 + i]
    if not is_paused('queue', queue) then
        promote(queue, now)
        for _, entry in ipairs(claimable(queue, limit)) do
            heads[#heads + 1] = {entry[1], entry[2], queue}
        end
    end
end
table.sort(heads, function(a, b)
    if a[2] ~= b[2] then return a[2] < b[2] end
    return a[1] < b[1]
end)
local claimed = {}
for i = 1, math.min(limit, #heads) do
    local id, queue = heads[i][1], heads[i][3]
    local k = jkey(id)
    local row = load(id)
    local token = ARGV[4 + n + i]
    local seconds = row.lease_seconds or lease_default
    local lease = now + math.floor(seconds * 1000000 + 0.5)
    row.lease_expires_at = lease
    move(id, 'queued', 'running', row, now)
    local attempt = redis.call('HINCRBY', k, 'attempt', 1)
    redis.call('HSET', k, 'claim_token', token, 'worker_id', worker_id, 'started_at', fmt(now),
        'body_pending', 0, 'lease_expires_at', fmt(lease))
    local r = redis.call('HMGET', k, 'name', 'input', 'max_attempts', 'priority', 'tenant',
        'created_at', 'traceparent')
    claimed[#claimed + 1] = {id, r[1], queue, r[2], attempt, tonumber(r[3]), token,
        tonumber(r[4]), r[5], fmt(lease), r[6], r[7]}
end
return claimed
