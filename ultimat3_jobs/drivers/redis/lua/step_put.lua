-- step_put: record a step done (with its output) or compensated (its output kept), fenced by
-- the claim token. Forward only: done on a new step or over started or waiting (leaving
-- B:waits), compensated only over done; anything else lands nothing.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     id, claim_token, name, seq, kind, status ('done' or 'compensated'),
--          output (JSON text), error ('' or '=' JSON text)
-- Writes B:steps:<id>, B:waits:<e>.
-- Answers 1 when it landed, else 0.
local id, token, name, seq, kind, status = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local output, err = ARGV[7], opt(ARGV[8])
if owned(id, token) == nil then return 0 end
local step = step_load(id, name)
if status == 'done' then
    if step ~= nil and step.status ~= 'started' and step.status ~= 'waiting' then return 0 end
    step = step or {name = name, seq = seq, kind = kind}
    step.output = output
elseif status ~= 'compensated' or step == nil or step.status ~= 'done' then
    return 0
end
step.status = status
if err then step.error = err end
step.updated_at = fmt(now_us())
step_save(id, step)
return 1
