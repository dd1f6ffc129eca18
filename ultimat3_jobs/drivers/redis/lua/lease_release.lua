-- lease_release: an operator frees every concurrency slot of one lease key, live or expired
-- (the runs holding them are not stopped); rate stamps stay.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     key
-- Writes B:lease:<k>, B:slots:<id> of each holder.
-- Answers how many slots went.
local key = ARGV[1]
local lkey = B .. ':lease:' .. key
local flat = redis.call('HGETALL', lkey)
local n = 0
for j = 1, #flat, 2 do
    local r = lease_row(flat[j + 1])
    if r.kind == 'concurrency' then
        redis.call('HDEL', lkey, flat[j])
        redis.call('SREM', B .. ':slots:' .. r.job, flat[j] .. '\t' .. key)
        n = n + 1
    end
end
return n
