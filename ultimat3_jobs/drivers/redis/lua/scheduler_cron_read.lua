-- scheduler_cron_read: each named cron's state, for an operator; writes nothing.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     cron names
-- Reads B:task:<t>.
-- Answers per cron: watermark last_fire_at last_job_id (all nil for a cron never seen).
local answer = {}
for i = 1, #ARGV do
    answer[i] = redis.call('HMGET', B .. ':task:' .. ARGV[i], 'watermark', 'last_fire_at', 'last_job_id')
end
return answer
