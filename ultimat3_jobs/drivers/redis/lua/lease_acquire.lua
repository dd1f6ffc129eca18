-- lease_acquire: take one slot of each request for a running attempt, all or nothing, fenced by
-- its claim token (drivers/leases_seam.py). Per request: the job's own live concurrency row of
-- the key first (an earlier attempt's leftover), else the lowest slot below the limit with no
-- live row (an expired row is free and is taken over). A concurrency slot expires with the
-- attempt's lease (the heartbeat renews both), a rate stamp ttl_seconds after the grant. Every
-- request is checked before anything is written, so a full key leaves nothing taken; a grant
-- stamps the job's started_at with the same TIME reading as the rows' acquired_at.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     job_id, claim_token, n, then per request: key, limit, kind, ttl_seconds
-- Reads B:job:<id>, B:lease:<k>; writes B:lease:<k>, B:slots:<id> (and an expired row's
-- former holder's B:slots:<id>), B:job:<id>.
-- Answers {1} granted; {0} fenced (not running under that token); {2, key, microseconds until
-- the key's first live row expires} when a key is full.
local id, token, n = ARGV[1], ARGV[2], tonumber(ARGV[3])
local row = owned(id, token)
if row == nil or row.lease_expires_at == nil then return {0} end
local now = now_us()
local plan, planned = {}, {}
for i = 0, n - 1 do
    local key, limit = ARGV[4 + i * 4], tonumber(ARGV[5 + i * 4])
    local kind, ttl = ARGV[6 + i * 4], tonumber(ARGV[7 + i * 4])
    assert(kind == 'concurrency' or kind == 'rate', 'unknown lease kind ' .. tostring(kind))
    local taken = planned[key] or {}
    planned[key] = taken
    local live, own, first = {}, nil, nil
    local flat = redis.call('HGETALL', B .. ':lease:' .. key)
    for j = 1, #flat, 2 do
        local slot, r = tonumber(flat[j]), lease_row(flat[j + 1])
        if r.expires > now then
            if first == nil or r.expires < first then first = r.expires end
            if kind == 'concurrency' and r.job == id and slot < limit and not taken[slot]
                and (own == nil or slot < own) then
                own = slot
            end
            live[slot] = true
        end
    end
    local slot = own
    if slot == nil then
        for s = 0, limit - 1 do
            if not live[s] and not taken[s] then
                slot = s
                break
            end
        end
    end
    if slot == nil then return {2, key, fmt(math.max(0, (first or now) - now))} end
    taken[slot] = true
    local expires = row.lease_expires_at
    if kind == 'rate' then expires = now + math.floor(ttl * 1000000 + 0.5) end
    plan[#plan + 1] = {key = key, slot = slot, kind = kind, expires = expires}
end
for _, p in ipairs(plan) do
    local place = fmt(p.slot) .. '\t' .. p.key
    local old = redis.call('HGET', B .. ':lease:' .. p.key, p.slot)
    if old then
        local former = lease_row(old)
        redis.call('SREM', B .. ':slots:' .. former.job, place)
    end
    lease_put(p.key, p.slot, {kind = p.kind, job = id, token = token, acquired = now,
        expires = p.expires}, now)
    if p.kind == 'concurrency' then redis.call('SADD', B .. ':slots:' .. id, place) end
end
redis.call('HSET', jkey(id), 'started_at', fmt(now))
return {1}
