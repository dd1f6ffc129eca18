-- job_enqueue: write one job unless a job with its id, or a live job with its name and
-- idempotency key, exists (then answer that job, deduped); wake its queue when it is due now
-- by request, handing the job to the worker it wakes when it can (handable, hand_to).
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     one job's 13 fields, as enqueue_one reads them: id name queue priority run_at delay
--          input key tenant enqueued_by max_attempts lease_seconds traceparent (optional ones
--          '' for null or '=' followed by the value); then 32 random hex digits, the claim
--          token of a hand ('' or none: never handed)
-- Writes B:job:<id>, B:jobs, B:queued:<q>, B:queues, B:names, B:keys, B:ready:<q> or
-- B:delayed:<q> or B:held:<n>; takes one worker off B:idle:<q> and either claims the job for
-- it (B:job:<id>, B:ready:<q>, B:queued:<q>, B:running, B:handed:<w>) and publishes it on its
-- B:hand:<w>, or publishes the queue on its B:wake:<w> (none idle: on B:wake).
-- Answers {status, id}.
local now = now_us()
local status, id, due_now = enqueue_one(ARGV, 1, now)
if status == 'created' and due_now then
    wake_one(ARGV[3], {id = id, random = ARGV[ENQUEUE_FIELDS + 1], now = now})
end
return {status, id}
