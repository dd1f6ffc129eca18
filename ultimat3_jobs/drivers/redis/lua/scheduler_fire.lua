-- scheduler_fire: one occurrence in one script: the cron's watermark moves from its old value
-- to the occurrence only while the holder leads at its epoch, and, when dispatching, the job
-- (due now) is written through enqueue_one only where the watermark moved.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     cron, old_watermark, occurrence (microseconds), dispatch ('1' or '0'), leader,
--          holder, epoch, then the job's 13 fields (as job_enqueue)
-- Writes B:task:<t> and what job_enqueue writes.
-- Answers {moved (1 or 0), job id or nil}.
local cron, old, occurrence = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local dispatch = ARGV[4] == '1'
local now = now_us()
local lease = redis.call('HMGET', B .. ':leader:' .. ARGV[5], 'holder', 'epoch', 'expires_at')
if lease[1] ~= ARGV[6] or tonumber(lease[2]) ~= tonumber(ARGV[7])
    or tonumber(lease[3]) <= now then
    return {0, false}
end
local k = B .. ':task:' .. cron
local watermark = redis.call('HGET', k, 'watermark')
if not watermark or tonumber(watermark) ~= old then return {0, false} end
local job_id = false
if dispatch then
    ARGV[12], ARGV[13] = '', ''  -- due now, whatever timing the request carries
    local status, id = enqueue_one(ARGV, 8, now)
    if status == 'created' then
        job_id = id
        wake({[ARGV[10]] = true})
    end
    redis.call('HSET', k, 'last_fire_at', occurrence)
end
redis.call('HSET', k, 'watermark', occurrence)
if job_id then redis.call('HSET', k, 'last_job_id', job_id) end
return {1, job_id}
