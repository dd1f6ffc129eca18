-- step_wait: begin a sleep or a wait for an event, fenced by the claim token, stamped by Redis
-- TIME: wait_since now, wait_until the given moment or now plus the timeout. A wait on an
-- event is listed in B:waits by wait_since, where event_send finds it. A step already stored
-- under that name is left alone.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     id, claim_token, name, seq, kind ('sleep' or 'event'), event ('' or '=' name),
--          key ('' or '=' key; '=' for none on an event), seconds ('' or '=' seconds),
--          until ('' or '=' microseconds)
-- Writes B:steps:<id>, B:waits:<e>.
-- Answers the stored step's JSON text, or nil when nothing landed.
local id, token, name, seq, kind = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local event, key, seconds, at = opt(ARGV[6]), opt(ARGV[7]), opt(ARGV[8]), opt(ARGV[9])
if owned(id, token) == nil then return nil end
if redis.call('HEXISTS', skey(id), name) == 1 then return nil end
local now = now_us()
local wait_until = at_or_after(at, seconds, now)
local step = {name = name, seq = seq, kind = kind, status = 'waiting', event = event,
    key = key, wait_since = fmt(now), wait_until = fmt(wait_until), updated_at = fmt(now)}
step_save(id, step)
return cjson.encode(step)
