-- job_count_finished: how many jobs job_purge_finished would delete at this cutoff, counted up
-- to `limit` (a dry run).
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     state (completed, failed or cancelled), before (microseconds), limit
-- Reads B:finished:<s>.
-- Answers the count.
assert(FINISHED[ARGV[1]], 'not a finished state: ' .. tostring(ARGV[1]))
local found = redis.call('ZCOUNT', B .. ':finished:' .. ARGV[1], '-inf', '(' .. ARGV[2])
return math.min(found, tonumber(ARGV[3]))
