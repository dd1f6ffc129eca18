-- job_rescue_expired: apply the policy's decision for each expired attempt: retry (queued,
-- due after its delay), fail (the dead letter) or drop (deleted). Each is re-checked (still
-- running under the same claim token, lease still ended); an attempt that counts gets a
-- LeaseExpired entry and moves the retried, dead or dropped counter, one that does not gives
-- its attempt back.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     n, then per attempt: id, claim_token, action, delay_seconds, counts ('1' or '0')
-- Writes B:job:<id>, B:running, B:queued:<q>/B:ready:<q>, B:done:failed:<n>, B:keys,
-- B:counters:minute.
-- Answers per rescued job: id name action attempt.
local COUNTER = {retry = 'retried', fail = 'dead', drop = 'dropped'}
local now = now_us()
local n = tonumber(ARGV[1])
local rescued = {}
for i = 0, n - 1 do
    local at = 2 + i * 5
    local id, token, action = ARGV[at], ARGV[at + 1], ARGV[at + 2]
    local delay, counts = tonumber(ARGV[at + 3]), ARGV[at + 4] == '1'
    local row = owned(id, token)
    if row and row.lease_expires_at and row.lease_expires_at < now then
        local k = jkey(id)
        local attempt = row.attempt
        if counts then
            local entry = cjson.encode({
                attempt = row.attempt,
                error_class = 'ultimat3_jobs.LeaseExpired',
                message = 'the lease expired before the attempt settled; its worker was lost',
                traceback = ''})
            local worker = row.worker_id and cjson.encode(row.worker_id) or 'null'
            redis.call('HSET', k, 'errors', append_entry(row.errors, entry,
                '"worker_id":' .. worker .. ',"at":"' .. iso(now) .. '"'))
            count(row.name, now, COUNTER[action])
        else
            attempt = math.max(attempt - 1, 0)
            redis.call('HSET', k, 'attempt', attempt)
        end
        redis.call('HDEL', k, 'lease_expires_at', 'claim_token')
        redis.call('HSET', k, 'body_pending', 0)
        if action == 'retry' then
            row.run_at = now + us(math.max(delay, 0))
            redis.call('HSET', k, 'run_at', fmt(row.run_at))
            redis.call('HDEL', k, 'finished_at')
            move(id, 'running', 'queued', row, now)
        elseif action == 'fail' then
            redis.call('HSET', k, 'finished_at', fmt(now))
            move(id, 'running', 'failed', row, now)
        else
            move(id, 'running', nil, row, now)
        end
        rescued[#rescued + 1] = {id, row.name, action, attempt}
    end
end
return rescued
