-- job_ack_many: settle completed attempts, each fenced by state and claim token; counts each
-- landed one as completed in its minute. The job's lease_expires_at stays in its hash, read as
-- null once it is no longer running (codec.job_record): one command less per job.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     n, then per item: id, claim_token, result (JSON text), progress ('' or '=' JSON)
-- Writes B:job:<id>, B:running, B:done:completed:<n>, B:finished:completed, B:keys,
-- B:counters:minute, B:counter_rows:minute.
-- Answers the positions (from 1, in ARGV's order) of the items that landed.
local now = now_us()
local finished = fmt(now)
local n = tonumber(ARGV[1])
local batch = new_batch()
local landed = {}
for i = 0, n - 1 do
    local id, token = ARGV[2 + i * 4], ARGV[3 + i * 4]
    local row = owned_to_finish(id, token)
    if row then
        local fields = {'result', ARGV[4 + i * 4], 'finished_at', finished}
        local progress = opt(ARGV[5 + i * 4])
        if progress then
            fields[5], fields[6] = 'progress', progress
        end
        move(id, 'running', 'completed', row, now, batch, fields)
        count(row.name, now, 'completed', batch)
        landed[#landed + 1] = i + 1
    end
end
flush(batch)
return landed
