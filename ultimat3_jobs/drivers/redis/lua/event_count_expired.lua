-- event_count_expired: how many events expired at or before a cutoff, counted up to `limit`
-- (what events_purge_expired would delete with that cutoff).
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     before (microseconds), limit
-- Reads B:event_expiry.
-- Answers the count.
local found = redis.call('ZCOUNT', B .. ':event_expiry', '-inf', ARGV[1])
return math.min(found, tonumber(ARGV[2]))
