-- backfill_advance: count one batch of a running run once: a replayed batch (its number not
-- above what is recorded) and a run no longer running write nothing.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     run_id, batch, cursor (JSON text), rows
-- Writes B:backfill:<r>.
-- Answers 1 when it landed, else 0.
local k = B .. ':backfill:' .. ARGV[1]
local row = redis.call('HMGET', k, 'status', 'batches_done')
local batch = tonumber(ARGV[2])
if row[1] ~= 'running' or tonumber(row[2]) >= batch then return 0 end
redis.call('HSET', k, 'cursor', ARGV[3], 'batches_done', ARGV[2], 'updated_at', fmt(now_us()))
redis.call('HINCRBY', k, 'rows_done', tonumber(ARGV[4]))
return 1
