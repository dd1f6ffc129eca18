-- scheduler_cron_sync: each named cron's state; a cron never seen starts at now, so it never
-- replays its history.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     cron names
-- Writes B:task:<t>.
-- Answers per cron: watermark last_fire_at last_job_id.
local now = now_us()
local answer = {}
for i = 1, #ARGV do
    local k = B .. ':task:' .. ARGV[i]
    redis.call('HSETNX', k, 'watermark', fmt(now))
    answer[i] = redis.call('HMGET', k, 'watermark', 'last_fire_at', 'last_job_id')
end
return answer
