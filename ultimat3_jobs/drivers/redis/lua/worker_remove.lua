-- worker_remove: forget a worker that stopped: its row, its idle listing and its room for
-- hands; a job handed to it that it never took (still running under the hand's token: its
-- message came too late, or never) goes back to queued at once, its attempt not counted, as a
-- release at shutdown gives back what the worker took.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     id
-- Writes B:worker:<w>, B:workers, B:idle:<q> (its queues), B:hands, B:handed:<w>, and for a
-- job given back B:job:<id>, B:running, B:queued:<q>, B:ready:<q>; publishes the queue of a
-- job given back on B:wake.
-- Answers 1 when it had a row, else 0.
local id = ARGV[1]
local k = B .. ':worker:' .. id
local queues = redis.call('HGET', k, 'queues')
if queues then
    for _, queue in ipairs(cjson.decode(queues)) do
        redis.call('ZREM', B .. ':idle:' .. queue, id)
    end
end
redis.call('HDEL', B .. ':hands', id)
local handed = B .. ':handed:' .. id
local notes = redis.call('HGETALL', handed)
redis.call('DEL', handed)
local now = now_us()
local woken = {}
for i = 1, #notes, 2 do
    local row = owned(notes[i], notes[i + 1])
    if row and row.worker_id == id then
        local job = jkey(notes[i])
        row.run_at = now
        redis.call('HSET', job, 'attempt', math.max(row.attempt - 1, 0), 'run_at', fmt(now))
        redis.call('HDEL', job, 'lease_expires_at', 'claim_token', 'worker_id')
        move(notes[i], 'running', 'queued', row, now)
        woken[row.queue] = true
    end
end
wake(woken)
redis.call('ZREM', B .. ':workers', id)
return redis.call('DEL', k)
