-- job_enqueue_many: job_enqueue for many jobs at one time, in order, through the same
-- enqueue_one: a key repeated within the batch dedupes to its first job. One wake per queue.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     n, then n jobs of 13 fields each (as job_enqueue)
-- Writes what job_enqueue writes.
-- Answers {status, id} per job, in order.
local now = now_us()
local n = tonumber(ARGV[1])
local answers, woken = {}, {}
-- The jobs' index entries go in one command per key at the end (the batch): nothing here
-- reads them, and a job's hash and its live key are written at once, so a repeated id or key
-- still dedupes to its first job.
local batch = new_batch()
for i = 0, n - 1 do
    local at = 2 + i * ENQUEUE_FIELDS
    local status, id, due_now = enqueue_one(ARGV, at, now, batch)
    if status == 'created' and due_now then woken[ARGV[at + 2]] = true end
    answers[#answers + 1] = {status, id}
end
flush(batch)
wake(woken)
return answers
