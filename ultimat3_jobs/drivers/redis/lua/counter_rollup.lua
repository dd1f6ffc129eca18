-- counter_rollup: fold minute rows whose hour ended more than keep_seconds ago into their
-- hour's row, deleting them in the same script (a bucket counts in one period only).
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     keep_seconds
-- Writes B:counters:minute, B:counters:hour, B:counter_rows:minute, B:counter_rows:hour.
-- Answers how many minute rows (job name and bucket) were folded.
local now = now_us()
local cutoff = now - us(ARGV[1])
local fields = redis.call('HGETALL', B .. ':counters:minute')
local folded = {}
local rows = 0
for i = 1, #fields, 2 do
    local bucket, outcome, name = string.match(fields[i], '^(%d+)\t(%a+)\t(.*)$')
    local seconds = tonumber(bucket)
    local hour = seconds - seconds % 3600
    if (hour + 3600) * 1000000 < cutoff then
        redis.call('HINCRBY', B .. ':counters:hour', fmt(hour) .. '\t' .. outcome .. '\t' .. name,
            tonumber(fields[i + 1]))
        redis.call('HDEL', B .. ':counters:minute', fields[i])
        redis.call('ZADD', B .. ':counter_rows:hour', hour, fmt(hour) .. '\t' .. name)
        local row = bucket .. '\t' .. name
        redis.call('ZREM', B .. ':counter_rows:minute', row)
        if not folded[row] then
            folded[row] = true
            rows = rows + 1
        end
    end
end
return rows
