-- job_enqueue: write one job unless a job with its id, or a live job with its name and
-- idempotency key, exists (then answer that job, deduped); wake its queue when it is due now
-- by request.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     one job's 13 fields, as enqueue_one reads them: id name queue priority run_at delay
--          input key tenant enqueued_by max_attempts lease_seconds traceparent (optional ones
--          '' for null or '=' followed by the value)
-- Writes B:job:<id>, B:jobs, B:queues, B:names, B:keys, B:queued:<q>, B:ready:<q> or
-- B:held:<n>; takes one worker off B:idle:<q> and publishes on its B:wake:<w> (none: B:wake).
-- Answers {status, id}.
local now = now_us()
local status, id, due_now = enqueue_one(ARGV, 1, now)
if status == 'created' and due_now then wake_one(ARGV[3]) end
return {status, id}
