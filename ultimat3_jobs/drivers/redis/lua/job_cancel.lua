-- job_cancel: cancel a live job (queued or running); a running attempt's later fenced writes
-- then miss. A given entry (the reason, who) gains the row's attempt and worker_id and "at".
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     id, entry ('' or '=' JSON object)
-- Writes B:job:<id>, B:queued:<q>/B:ready:<q>/B:held:<n> or B:running, B:done:cancelled:<n>,
-- B:keys, B:counters:minute.
-- Answers 1 when the job was live, else 0.
local id, entry = ARGV[1], opt(ARGV[2])
local now = now_us()
local row = load(id)
if row == nil or not LIVE[row.state] then return 0 end
local k = jkey(id)
if entry then
    local worker = row.worker_id and cjson.encode(row.worker_id) or 'null'
    redis.call('HSET', k, 'errors', append_entry(row.errors, entry, '"attempt":' ..
        fmt(row.attempt) .. ',"worker_id":' .. worker .. ',"at":"' .. iso(now) .. '"'))
end
move(id, row.state, 'cancelled', row, now)
redis.call('HSET', k, 'finished_at', fmt(now))
redis.call('HDEL', k, 'lease_expires_at')
count(row.name, now, 'cancelled')
return 1
