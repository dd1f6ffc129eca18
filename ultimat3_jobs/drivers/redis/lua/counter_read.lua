-- counter_read: the counter rows of one period (minute or hour), whose buckets the driver
-- filters and groups.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     period, ... (further periods, for counter_total)
-- Reads B:counters:<p>.
-- Answers per period its hash as field, value pairs.
local answer = {}
for i = 1, #ARGV do answer[i] = redis.call('HGETALL', B .. ':counters:' .. ARGV[i]) end
return answer
