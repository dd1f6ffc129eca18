-- backfill_list: the recorded runs, newest start first, at most `limit`.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     limit
-- Reads B:backfills, B:backfill:<r>.
-- Answers per run its hash as field, value pairs.
local limit = tonumber(ARGV[1])
if limit <= 0 then return {} end
local runs = {}
for _, run in ipairs(redis.call('ZREVRANGE', B .. ':backfills', 0, limit - 1)) do
    runs[#runs + 1] = redis.call('HGETALL', B .. ':backfill:' .. run)
end
return runs
