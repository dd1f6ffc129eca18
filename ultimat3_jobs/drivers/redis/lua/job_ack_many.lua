-- job_ack_many: settle completed attempts, each fenced by state and claim token; counts each
-- landed one as completed in its minute.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     n, then per item: id, claim_token, result (JSON text), progress ('' or '=' JSON)
-- Writes B:job:<id>, B:running, B:done:completed:<n>, B:keys, B:counters:minute.
-- Answers the ids that landed.
local now = now_us()
local n = tonumber(ARGV[1])
local landed = {}
for i = 0, n - 1 do
    local id, token = ARGV[2 + i * 4], ARGV[3 + i * 4]
    local row = owned(id, token)
    if row then
        local k = jkey(id)
        move(id, 'running', 'completed', row, now)
        redis.call('HSET', k, 'result', ARGV[4 + i * 4], 'finished_at', fmt(now))
        local progress = opt(ARGV[5 + i * 4])
        if progress then redis.call('HSET', k, 'progress', progress) end
        redis.call('HDEL', k, 'lease_expires_at')
        count(row.name, now, 'completed')
        landed[#landed + 1] = id
    end
end
return landed
