-- job_claim: claim up to `limit` due jobs from the named queues, highest priority first, then
-- earliest run_at; paused queues and the jobs of paused names are skipped.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     worker_id, lease_seconds, limit, n (queues), queue * n, random hex (32 digits per
--          job of `limit`: the claim token of the i-th job claimed is made of the i-th 32)
-- Reads B:pauses, B:delayed:<q>, B:ready:<q>; writes B:job:<id>, B:ready:<q>, B:delayed:<q>,
-- B:queued:<q>, B:held:<n>, B:running, B:idle:<q> (this worker: listed when it found fewer
-- jobs than `limit`, else not).
-- Answers per claimed job: id name queue input attempt max_attempts claim_token priority
-- tenant lease_expires_at created_at traceparent.
local worker_id, lease_default = ARGV[1], tonumber(ARGV[2])
local limit, n = tonumber(ARGV[3]), tonumber(ARGV[4])
local random = ARGV[5 + n]
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

-- The i-th claim token: a version 4 UUID's text from the i-th 32 random hex digits.
local function token_at(i)
    local h = string.sub(random, i * 32 - 31, i * 32)
    local variant = string.format('%x', 8 + tonumber(string.sub(h, 17, 17), 16) % 4)
    return string.sub(h, 1, 8) .. '-' .. string.sub(h, 9, 12) .. '-4' .. string.sub(h, 14, 16)
        .. '-' .. variant .. string.sub(h, 18, 20) .. '-' .. string.sub(h, 21, 32)
end

local batch = new_batch()
local started = fmt(now)
local claimed = {}
for i = 1, math.min(limit, #heads) do
    local id, queue = heads[i][1], heads[i][3]
    local r = redis.call('HMGET', jkey(id), 'name', 'priority', 'run_at', 'key', 'created_at',
        'lease_seconds', 'attempt', 'input', 'max_attempts', 'tenant', 'traceparent')
    local seconds = tonumber(r[6]) or lease_default
    local lease = now + math.floor(seconds * 1000000 + 0.5)
    local attempt = tonumber(r[7]) + 1
    local token = token_at(i)
    local row = {name = r[1], queue = queue, priority = tonumber(r[2]), run_at = tonumber(r[3]),
        key = r[4] or nil, created_at = tonumber(r[5]), lease_expires_at = lease}
    move(id, 'queued', 'running', row, now, batch, {'attempt', attempt, 'claim_token', token,
        'worker_id', worker_id, 'started_at', started, 'body_pending', 0,
        'lease_expires_at', fmt(lease)})
    claimed[#claimed + 1] = {id, r[1], queue, r[8], attempt, tonumber(r[9]), token,
        tonumber(r[2]), r[10], fmt(lease), r[5], r[11]}
end
flush(batch)
-- Found fewer than it asked for: idle on these queues, the worker a single enqueue wakes alone.
local idle = #claimed < limit
for i = 1, n do
    local key = B .. ':idle:' .. ARGV[4 + i]
    if idle then redis.call('ZADD', key, now, worker_id) else redis.call('ZREM', key, worker_id) end
end
return claimed
