-- job_mark_pending_many: record, fenced, whether each running attempt's body still waits to
-- start.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     pending ('1' or '0'), n, then per attempt: id, claim_token
-- Writes B:job:<id>.
-- Answers the ids whose mark landed.
local pending, n = ARGV[1], tonumber(ARGV[2])
local landed = {}
for i = 0, n - 1 do
    local id, token = ARGV[3 + i * 2], ARGV[4 + i * 2]
    if owned(id, token) then
        redis.call('HSET', jkey(id), 'body_pending', pending)
        landed[#landed + 1] = id
    end
end
return landed
