-- job_suspend: give a running attempt back while its step waits, fenced by the claim token:
-- queued again, due at the step's wait_until (now, when the step no longer waits or an event
-- that ends it was sent meanwhile), its attempt count one less, lease, claim and worker
-- cleared; no error entry, no counter, no wake.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     id, claim_token, step name
-- Writes B:job:<id>, B:running, B:queued:<q>/B:ready:<q> (or B:held:<n>).
-- Answers 1 when it landed, else 0 (fence missed, or no such step).
local id, token, name = ARGV[1], ARGV[2], ARGV[3]
local row = owned(id, token)
if row == nil then return 0 end
local step = step_load(id, name)
if step == nil then return 0 end
local now = now_us()
row.run_at = now
if step.status == 'waiting' and step_match(step) == nil then
    row.run_at = math.max(tonumber(step.wait_until), now)
end
local k = jkey(id)
redis.call('HSET', k, 'run_at', fmt(row.run_at), 'attempt', math.max(row.attempt - 1, 0),
    'body_pending', 0)
redis.call('HDEL', k, 'lease_expires_at', 'claim_token', 'worker_id')
move(id, 'running', 'queued', row, now)
return 1
