-- job_rescue_expired_scan: running attempts whose lease ended, oldest lease first, with what
-- the worker's policy needs; job_rescue_expired applies its decisions.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     limit
-- Reads B:running, B:job:<id>.
-- Answers per attempt: id claim_token name attempt max_attempts body_pending.
local now = now_us()
local ids = redis.call('ZRANGEBYSCORE', B .. ':running', '-inf', '(' .. fmt(now), 'LIMIT', 0,
    tonumber(ARGV[1]))
local found = {}
for _, id in ipairs(ids) do
    local r = redis.call('HMGET', jkey(id), 'claim_token', 'name', 'attempt', 'max_attempts',
        'body_pending')
    found[#found + 1] = {id, r[1], r[2], tonumber(r[3]), tonumber(r[4]), r[5]}
end
return found
