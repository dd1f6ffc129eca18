-- queue_demand: per queue, the jobs ready to claim now, counted up to a bound; 0 for a paused
-- queue, and the jobs of paused names do not count.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     bound (QUEUE_DEMAND_ROWS), queue names...
-- Reads B:pauses, B:queued:<q>, B:ready:<q>; writes B:promoted, B:ready:<q>, B:held:<n>.
-- Answers one count per queue, in order.
local now = now_us()
local counts = {}
local bound = tonumber(ARGV[1])
for i = 2, #ARGV do counts[i - 1] = demand(ARGV[i], now, bound) end
return counts
