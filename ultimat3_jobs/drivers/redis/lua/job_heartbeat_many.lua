-- job_heartbeat_many: extend the leases of running attempts to now plus the job's own
-- lease_seconds or else the default, and store the progress given, fenced; the attempt's
-- concurrency slots (B:slots:<id>) follow its lease. A script runs alone, so no attempt is ever
-- busy: each held one is renewed.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     lease_seconds, n, then per attempt: id, claim_token, progress ('' or '=' JSON)
-- Writes B:job:<id>, B:running, B:lease:<k> (the slots the attempt holds).
-- Answers the renewed ids.
local lease_default, n = tonumber(ARGV[1]), tonumber(ARGV[2])
local now = now_us()
local renewed = {}
for i = 0, n - 1 do
    local id, token, progress = ARGV[3 + i * 3], ARGV[4 + i * 3], opt(ARGV[5 + i * 3])
    local row = owned(id, token)
    if row then
        local lease = now + math.floor((row.lease_seconds or lease_default) * 1000000 + 0.5)
        redis.call('HSET', jkey(id), 'lease_expires_at', fmt(lease))
        if progress then redis.call('HSET', jkey(id), 'progress', progress) end
        redis.call('ZADD', B .. ':running', lease, id)
        slots_each(id, token, function(lkey, slot, r)
            r.expires = lease
            redis.call('HSET', lkey, slot, lease_text(r))
        end)
        renewed[#renewed + 1] = id
    end
end
return renewed
