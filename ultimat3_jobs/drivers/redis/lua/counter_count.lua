-- counter_count: how many counter rows counter_purge would delete at this cutoff, counted up
-- to `limit`.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     before (microseconds), limit
-- Reads B:counter_rows:minute, B:counter_rows:hour.
-- Answers the count.
local top = fmt(math.ceil(tonumber(ARGV[1]) / 1000000) - 1)
local found = redis.call('ZCOUNT', B .. ':counter_rows:minute', '-inf', top)
    + redis.call('ZCOUNT', B .. ':counter_rows:hour', '-inf', top)
return math.min(found, tonumber(ARGV[2]))
