-- job_promote: a queued job due later becomes due now and its queue is woken; one already due
-- keeps its run_at, and so its place in claim order.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     id
-- Writes B:job:<id>, B:queued:<q>, B:ready:<q>; publishes on B:wake.
-- Answers 1 when it landed, else 0.
local id = ARGV[1]
local now = now_us()
local row = load(id)
if row == nil or row.state ~= 'queued' or row.run_at <= now then return 0 end
redis.call('HSET', jkey(id), 'run_at', fmt(now))
place(id, row.queue, row.name, row.priority, now, now)
wake({[row.queue] = true})
return 1
