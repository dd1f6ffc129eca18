-- backfill_start: record a backfill run as running, once (its job id is the key); nothing is
-- written while another run of the same name and scope is completed, which is what blocks a
-- new run.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     name, scope, run_id, environment
-- Reads B:backfill_done; writes B:backfill:<r>, B:backfills, B:backfill_seq.
-- Answers the run's hash as field, value pairs (none when it was not recorded).
local name, scope, run, environment = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local k = B .. ':backfill:' .. run
local done = redis.call('HGET', B .. ':backfill_done', live_field(name, scope))
if redis.call('EXISTS', k) == 0 and not done then
    local now = fmt(now_us())
    redis.call('HSET', k, 'name', name, 'scope', scope, 'run_id', run,
        'environment', environment, 'status', 'running', 'rows_done', 0, 'batches_done', 0,
        'error', '', 'started_at', now, 'updated_at', now)
    redis.call('ZADD', B .. ':backfills', redis.call('INCR', B .. ':backfill_seq'), run)
end
return redis.call('HGETALL', k)
