-- pause_add: pause a queue, a job name or a cron; adding one twice changes nothing. A paused
-- name's queued jobs leave the ready sets as a claim meets them (B:held:<n>).
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     scope, target, meta (JSON {paused_by, reason})
-- Writes B:pauses, B:pause_order, B:paused_jobs.
-- Answers 1 when it was not paused before, else 0.
local field = ARGV[1] .. '\t' .. ARGV[2]
if redis.call('HSETNX', B .. ':pauses', field, ARGV[3]) == 0 then return 0 end
redis.call('ZADD', B .. ':pause_order', now_us(), field)
if ARGV[1] == 'job' then redis.call('SADD', B .. ':paused_jobs', ARGV[2]) end
return 1
