-- job_list: one page of jobs, newest first by (created_at, id), below the cursor's job when
-- one is given, filtered exactly. Walks B:jobs from the cursor down and stops after the page.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     after ('' or an id), limit, states, queues, names (each '' for any, else values
--          joined by "\n"), tenant ('' or '=' value), search ('' or '=' value), search_id
--          ('' or an id)
-- Reads B:jobs, B:job:<id>.
-- Answers {anchored (1 or 0), then per job its hash as field, value pairs, with "id"}.
local function set_of(text)
    if text == '' then return nil end
    local set = {}
    for value in string.gmatch(text, '([^\n]+)') do set[value] = true end
    return set
end
local after, limit = ARGV[1], tonumber(ARGV[2])
local states, queues, names = set_of(ARGV[3]), set_of(ARGV[4]), set_of(ARGV[5])
local tenant, search, search_id = opt(ARGV[6]), opt(ARGV[7]), ARGV[8]
local start = 0
if after ~= '' then
    local rank = redis.call('ZREVRANK', B .. ':jobs', after)
    if not rank then return {0} end
    start = rank + 1
end
local page = {1}
local WINDOW = 500
while #page - 1 < limit + 1 do
    local ids = redis.call('ZREVRANGE', B .. ':jobs', start, start + WINDOW - 1)
    if #ids == 0 then break end
    for _, id in ipairs(ids) do
        local r = redis.call('HMGET', jkey(id), 'state', 'queue', 'name', 'tenant', 'key')
        if (states == nil or states[r[1]]) and (queues == nil or queues[r[2]])
            and (names == nil or names[r[3]]) and (tenant == nil or r[4] == tenant)
            and (search == nil or r[5] == search or id == search_id) then
            local row = redis.call('HGETALL', jkey(id))
            row[#row + 1] = 'id'
            row[#row + 1] = id
            page[#page + 1] = row
            if #page - 1 >= limit + 1 then break end
        end
    end
    start = start + WINDOW
end
return page
