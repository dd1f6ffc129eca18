-- counter_purge: delete up to `limit` settle-counter rows (a job name's bucket, of either
-- period) whose bucket starts before a cutoff, oldest bucket first.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     before (microseconds), limit
-- Reads B:counter_rows:<p>; writes B:counters:<p>, B:counter_rows:<p> (p minute and hour).
-- Answers how many rows it deleted.
local top = math.ceil(tonumber(ARGV[1]) / 1000000) - 1  -- the last whole second before it
local limit = tonumber(ARGV[2])
local rows = {}
for _, period in ipairs({'minute', 'hour'}) do
    local found = redis.call('ZRANGEBYSCORE', B .. ':counter_rows:' .. period, '-inf', fmt(top),
        'WITHSCORES', 'LIMIT', 0, limit)
    for i = 1, #found, 2 do
        rows[#rows + 1] = {period, found[i], tonumber(found[i + 1])}
    end
end
table.sort(rows, function(a, b)
    if a[3] ~= b[3] then return a[3] < b[3] end
    return a[2] < b[2]
end)
local n = math.min(limit, #rows)
for i = 1, n do
    local period, member = rows[i][1], rows[i][2]
    local bucket, name = string.match(member, '^(%d+)\t(.*)$')
    for outcome, _ in pairs(COUNTED) do
        redis.call('HDEL', B .. ':counters:' .. period, bucket .. '\t' .. outcome .. '\t' .. name)
    end
    redis.call('ZREM', B .. ':counter_rows:' .. period, member)
end
return n
