-- job_nack: settle a failed attempt, fenced: retry (queued, due after a delay), fail (the dead
-- letter) or drop (deleted). The error entry gains "at"; an attempt that does not count gives
-- its attempt back. Counters: retried, dead (refused when it does not count), dropped.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     id, claim_token, action, delay_seconds, error ('' or '=' JSON object),
--          counts ('1' or '0'), progress ('' or '=' JSON)
-- Writes B:job:<id>, B:running, B:queued:<q>/B:ready:<q>, B:done:failed:<n>, B:keys,
-- B:counters:minute.
-- Answers 1 when it landed, else 0.
local id, token, action = ARGV[1], ARGV[2], ARGV[3]
local delay, entry, counts = tonumber(ARGV[4]), opt(ARGV[5]), ARGV[6] == '1'
local progress = opt(ARGV[7])
local now = now_us()
local row = owned(id, token)
if row == nil then return 0 end
local k = jkey(id)
if action == 'drop' then
    move(id, 'running', nil, row, now)
    count(row.name, now, 'dropped')
    return 1
end
if not counts then redis.call('HSET', k, 'attempt', math.max(row.attempt - 1, 0)) end
if entry then
    redis.call('HSET', k, 'errors', append_entry(row.errors, entry, '"at":"' .. iso(now) .. '"'))
end
if progress then redis.call('HSET', k, 'progress', progress) end
redis.call('HDEL', k, 'lease_expires_at')
if action == 'retry' then
    row.run_at = now + us(math.max(delay, 0))
    redis.call('HSET', k, 'run_at', fmt(row.run_at))
    redis.call('HDEL', k, 'claim_token', 'worker_id')
    move(id, 'running', 'queued', row, now)
    if counts then count(row.name, now, 'retried') end
else
    redis.call('HSET', k, 'finished_at', fmt(now))
    move(id, 'running', 'failed', row, now)
    count(row.name, now, counts and 'dead' or 'refused')
end
return 1
