-- job_purge_finished: delete up to `limit` jobs finished in one state before a cutoff, oldest
-- finish first, each with its steps and every index that lists it (move in _lib.lua).
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     state (completed, failed or cancelled), before (microseconds), limit
-- Reads B:finished:<s>; writes B:job:<id>, B:steps:<id>, B:jobs, B:done:<s>:<n>, B:finished:<s>.
-- Answers how many jobs it deleted.
local state, before, limit = ARGV[1], ARGV[2], tonumber(ARGV[3])
assert(FINISHED[state], 'not a finished state: ' .. tostring(state))
local index = B .. ':finished:' .. state
local now = now_us()
local doomed = redis.call('ZRANGEBYSCORE', index, '-inf', '(' .. before, 'LIMIT', 0, limit)
local n = 0
for _, id in ipairs(doomed) do
    local row = load(id)
    if row and row.state == state then
        move(id, state, nil, row, now)
        n = n + 1
    else
        redis.call('ZREM', index, id)
    end
end
return n
