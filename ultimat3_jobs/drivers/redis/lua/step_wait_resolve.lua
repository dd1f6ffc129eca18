-- step_wait_resolve: end a waiting step when it may end, fenced by the claim token: done with
-- the payload of the first event of its event and key sent at or after wait_since, else done
-- with null once Redis TIME reaches wait_until; otherwise it stays waiting.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     id, claim_token, name
-- Reads B:events:<e>, B:event:<eid>. Writes B:steps:<id>, B:waits:<e>.
-- Answers the step's JSON text as it then stands, or nil (fence missed, or no such step).
local id, token, name = ARGV[1], ARGV[2], ARGV[3]
if owned(id, token) == nil then return nil end
local step = step_load(id, name)
if step == nil then return nil end
if step.status ~= 'waiting' then return cjson.encode(step) end
local now = now_us()
local found = step_match(step)
if found == nil and tonumber(step.wait_until) > now then return cjson.encode(step) end
if found then
    step.output = redis.call('HGET', B .. ':event:' .. found, 'payload')
else
    step.output = 'null'
end
step.status = 'done'
step.updated_at = fmt(now)
step_save(id, step)
return cjson.encode(step)
