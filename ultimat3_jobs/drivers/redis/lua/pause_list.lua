-- pause_list: every pause, oldest first.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     none
-- Reads B:pause_order, B:pauses.
-- Answers per pause: field ("<scope>\t<target>"), created_at, meta (JSON).
local order = redis.call('ZRANGE', B .. ':pause_order', 0, -1, 'WITHSCORES')
local answer = {}
for i = 1, #order, 2 do
    answer[#answer + 1] = {order[i], order[i + 1], redis.call('HGET', B .. ':pauses', order[i])}
end
return answer
