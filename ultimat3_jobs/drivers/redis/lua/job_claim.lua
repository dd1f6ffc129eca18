-- job_claim: claim up to `limit` due jobs from the named queues, highest priority first, then
-- earliest run_at; paused queues and the jobs of paused names are skipped. The jobs handed to
-- this worker since its last claim that it still runs come first (a hand's message may be
-- lost), counted in `limit`.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     worker_id, lease_seconds, limit, n (queues), queue * n, random hex (32 digits per
--          job of `limit`: the claim token of the i-th job claimed is made of the i-th 32)
-- Reads B:pauses, B:delayed:<q>, B:ready:<q>; writes B:job:<id>, B:ready:<q>, B:delayed:<q>,
-- B:queued:<q>, B:held:<n>, B:running, B:idle:<q> (this worker: listed when it found fewer
-- jobs than `limit`, else not), B:hands (its lease seconds and room, when listed), B:handed:<w>
-- (the jobs answered).
-- Answers per claimed job: id name queue input attempt max_attempts claim_token priority
-- tenant traceparent (claim_one); the handed jobs first, with 'handed' after.
local worker_id, lease_default = ARGV[1], tonumber(ARGV[2])
local limit, n = tonumber(ARGV[3]), tonumber(ARGV[4])
local random = ARGV[5 + n]
local now = now_us()
local claimed = handed_take(worker_id, limit)
local wanted = limit - #claimed
local heads = {}
for i = 1, n do
    local queue = ARGV[4 + i]
    if wanted > 0 and not is_paused('queue', queue) then
        promote(queue, now)
        for _, entry in ipairs(claimable(queue, wanted, n > 1)) do
            heads[#heads + 1] = {entry[1], entry[2], queue}
        end
    end
end
-- One queue's heads are in claim order already (its ready set's: by score, ties by id).
if n > 1 then
    table.sort(heads, function(a, b)
        if a[2] ~= b[2] then return a[2] < b[2] end
        return a[1] < b[1]
    end)
end

local batch = new_batch()
for i = 1, math.min(wanted, #heads) do
    claimed[#claimed + 1] = claim_one(heads[i][1], heads[i][3], worker_id, lease_default,
        claim_token(random, i), now, batch)
end
flush(batch)
-- Found fewer than it asked for: idle on these queues, the worker a single enqueue wakes alone.
local idle = #claimed < limit
for i = 1, n do
    local key = B .. ':idle:' .. ARGV[4 + i]
    if idle then redis.call('ZADD', key, now, worker_id) else redis.call('ZREM', key, worker_id) end
end
-- Listed, it may be handed as many jobs as it found fewer than it asked for (hand_to).
if idle then
    redis.call('HSET', B .. ':hands', worker_id, ARGV[2] .. ' ' .. (limit - #claimed))
else
    redis.call('HDEL', B .. ':hands', worker_id)
end
return claimed
