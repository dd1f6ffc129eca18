-- job_requeue_failed: up to `limit` failed jobs of one name back to queued, oldest first, as
-- job_requeue does. A job whose key a live job holds is skipped, and of failed jobs sharing a
-- key only the newest is taken; both rules apply before the limit. One wake per queue.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     name, limit
-- Writes what job_requeue writes.
-- Answers {moved, remaining}.
local name, limit = ARGV[1], tonumber(ARGV[2])
local now = now_us()
local failed = redis.call('ZRANGE', B .. ':done:failed:' .. name, 0, -1)
local newest = {}
for _, id in ipairs(failed) do
    local key = redis.call('HGET', jkey(id), 'key')
    if key then newest[key] = id end
end
local moved, woken = 0, {}
for _, id in ipairs(failed) do
    if moved >= limit then break end
    local row = load(id)
    local take = row.key == nil
    if row.key then
        take = newest[row.key] == id
            and not redis.call('HGET', B .. ':keys', live_field(name, row.key))
    end
    if take then
        row.run_at = now
        redis.call('HSET', jkey(id), 'run_at', fmt(now), 'attempt', 0)
        redis.call('HDEL', jkey(id), 'claim_token', 'worker_id', 'lease_expires_at',
            'started_at', 'finished_at', 'result', 'progress')
        move(id, 'failed', 'queued', row, now)
        woken[row.queue] = true
        moved = moved + 1
    end
end
wake(woken)
return {moved, #failed - moved}
