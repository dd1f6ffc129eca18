-- lease_list: the operator's read of the live rows of the lease keys given (the driver finds
-- them with SCAN and hands them over sorted, a chunk at a time), of one kind or all, by key
-- then slot, at most `limit`, each with the worker whose claim still holds the row's job.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     kind ('' for both), limit, then lease keys (without the B:lease: head), in order
-- Reads B:lease:<k>, B:job:<id>.
-- Answers per row: key, slot, kind, job_id, claim_token, acquired_at, expires_at, worker_id
-- ('' once the job left that claim).
local kind, limit = ARGV[1], tonumber(ARGV[2])
local now = now_us()
local rows = {}
for i = 3, #ARGV do
    local key = ARGV[i]
    local flat = redis.call('HGETALL', B .. ':lease:' .. key)
    local found = {}
    for j = 1, #flat, 2 do
        local r = lease_row(flat[j + 1])
        if r.expires > now and (kind == '' or r.kind == kind) then
            r.slot = tonumber(flat[j])
            found[#found + 1] = r
        end
    end
    table.sort(found, function(a, b) return a.slot < b.slot end)
    for _, r in ipairs(found) do
        if #rows >= limit then return rows end
        local job = redis.call('HMGET', jkey(r.job), 'state', 'claim_token', 'worker_id')
        local worker = ''
        if job[1] == 'running' and job[2] == r.token and job[3] then worker = job[3] end
        rows[#rows + 1] = {key, fmt(r.slot), r.kind, r.job, r.token, fmt(r.acquired),
            fmt(r.expires), worker}
    end
end
return rows
