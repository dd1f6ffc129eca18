-- step_start_once: mark a once step started before its function runs, fenced by the claim
-- token; a step already stored under that name (an earlier attempt's) is left alone.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     id, claim_token, name, seq
-- Writes B:steps:<id>.
-- Answers 1 when it landed, else 0.
local id, token, name, seq = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if owned(id, token) == nil then return 0 end
if redis.call('HEXISTS', skey(id), name) == 1 then return 0 end
step_save(id, {name = name, seq = seq, kind = 'once', status = 'started',
    updated_at = fmt(now_us())})
return 1
