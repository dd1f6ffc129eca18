-- job_requeue: a finished job back to queued, due now, attempts reset, errors kept; refused
-- while another live job holds its idempotency key.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     id
-- Writes B:job:<id>, B:done:<s>:<n>, B:queued:<q>/B:ready:<q>, B:keys.
-- Answers {'requeued'}, {'missing'}, {'live', state} or {'duplicate', holder}.
local id = ARGV[1]
local now = now_us()
local row = load(id)
if row == nil then return {'missing'} end
local holder = row.key and redis.call('HGET', B .. ':keys', live_field(row.name, row.key))
if holder == id then holder = false end
if LIVE[row.state] then return {'live', row.state} end
if holder then return {'duplicate', holder} end
row.run_at = now
redis.call('HSET', jkey(id), 'run_at', fmt(now), 'attempt', 0)
redis.call('HDEL', jkey(id), 'claim_token', 'worker_id', 'lease_expires_at', 'started_at',
    'finished_at', 'result', 'progress')
move(id, row.state, 'queued', row, now)
wake({[row.queue] = true})
return {'requeued'}
