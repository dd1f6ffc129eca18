-- lease_holders: the live (unexpired by Redis TIME) rows of one lease key.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     key
-- Reads B:lease:<k>.
-- Answers per live row: slot, kind, job_id, claim_token, acquired_at, expires_at (the driver
-- orders them by slot).
local now = now_us()
local flat = redis.call('HGETALL', B .. ':lease:' .. ARGV[1])
local rows = {}
for j = 1, #flat, 2 do
    local r = lease_row(flat[j + 1])
    if r.expires > now then
        rows[#rows + 1] = {flat[j], r.kind, r.job, r.token, fmt(r.acquired), fmt(r.expires)}
    end
end
return rows
