-- backfill_finish: end a running run once, completed or failed (with its error). Only one run
-- of a name and scope may be completed: a second is refused (x_backfills_completed), as
-- PostgreSQL's unique index refuses it.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     run_id, status (completed or failed), error
-- Reads and writes B:backfill:<r>, B:backfill_done.
-- Answers 1 when it landed, else 0.
local run, status, err = ARGV[1], ARGV[2], ARGV[3]
if status ~= 'completed' and status ~= 'failed' then
    return redis.error_reply('x_backfills_status: status must be completed or failed; got '
        .. status)
end
local k = B .. ':backfill:' .. run
local row = redis.call('HMGET', k, 'status', 'name', 'scope')
if row[1] ~= 'running' then return 0 end
if status == 'completed' then
    local field = live_field(row[2], row[3])
    local done = redis.call('HGET', B .. ':backfill_done', field)
    if done and done ~= run then
        return redis.error_reply('x_backfills_completed: ' .. row[2] .. ':' .. row[3]
            .. ' has a completed run')
    end
    redis.call('HSET', B .. ':backfill_done', field, run)
end
local now = fmt(now_us())
redis.call('HSET', k, 'status', status, 'error', err, 'finished_at', now, 'updated_at', now)
return 1
