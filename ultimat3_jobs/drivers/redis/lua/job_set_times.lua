-- job_set_times (test support): move a job's run_at or lease_expires_at, as the PostgreSQL
-- tests do with an UPDATE, keeping its place in the claim order and the rescue's in step.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     id, run_at ('' to keep, else microseconds), lease_expires_at (the same)
-- Writes B:job:<id>, B:queued:<q>, B:ready:<q>, B:held:<n>, B:running.
-- Answers 1 when the job exists, else 0.
local id, run_at, lease = ARGV[1], opt(ARGV[2]), opt(ARGV[3])
local row = load(id)
if row == nil then return 0 end
if run_at then
    redis.call('HSET', jkey(id), 'run_at', run_at)
    if row.state == 'queued' then
        place(id, row.queue, row.name, row.priority, tonumber(run_at), now_us())
    end
end
if lease then
    redis.call('HSET', jkey(id), 'lease_expires_at', lease)
    if row.state == 'running' then redis.call('ZADD', B .. ':running', lease, id) end
end
return 1
