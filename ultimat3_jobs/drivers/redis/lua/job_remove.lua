-- job_remove: delete a job that is not running, with its history; counters do not move.
-- KEYS[1]  the store's base key (see the key layout in _lib.lua)
-- ARGV     id
-- Writes B:job:<id>, B:jobs and the job's indexes.
-- Answers 1 when it landed, else 0.
local id = ARGV[1]
local row = load(id)
if row == nil or row.state == 'running' then return 0 end
move(id, row.state, nil, row, now_us())
return 1
