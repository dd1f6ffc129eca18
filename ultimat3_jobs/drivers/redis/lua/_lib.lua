-- The shared prelude: prepended to every operation's script when it is loaded (scripts.py), so
-- each operation is one script with one SHA and the rules below live in one place.
--
-- KEYS[1] is the store's base key, a hash tag such as "{ultimat3_jobs}"; every key is that
-- base followed by ":<name>", so all keys of one store hash to one Redis Cluster slot.
--
-- Key layout (B = KEYS[1]; <id> a job id, <q> a queue, <n> a job name):
--   B:job:<id>       HASH   one job: name queue state priority run_at input key tenant
--                           enqueued_by attempt max_attempts lease_seconds claim_token worker_id
--                           lease_expires_at progress result errors traceparent created_at
--                           started_at finished_at body_pending (times: integer microseconds
--                           since the epoch, read from Redis TIME; a missing field is null,
--                           and so is lease_expires_at while the job is not running: an ack
--                           leaves it behind)
--   B:jobs           ZSET   every job by created_at (job_list walks it newest first)
--   B:queued:<q>     ZSET   the queue's queued jobs by run_at (stats)
--   B:ready:<q>      ZSET   its due jobs in claim order: score (100 - priority) * 1e13 + run_at
--                           in ms, ties by id
--   B:delayed:<q>    ZSET   its queued jobs not due when placed, by run_at (a claim promotes
--                           the ones fallen due to ready)
--   B:held:<n>       SET    queued jobs of a paused job name, out of every ready set
--                           (a queued job is in exactly one of ready, delayed, held)
--   B:running        ZSET   running jobs by lease_expires_at (the rescue's order)
--   B:done:<s>:<n>   ZSET   finished jobs of state <s> and name <n> by created_at
--   B:keys           HASH   the live (queued, running) job of each name and idempotency key
--   B:queues, B:names SET  every queue and job name seen
--   B:pauses         HASH   "<scope>\t<target>" -> JSON {paused_by, reason}
--   B:pause_order    ZSET   the same fields by created_at
--   B:paused_jobs    SET    the paused job names
--   B:counters:<p>   HASH   "<bucket seconds>\t<outcome>\t<name>" -> count, p minute or hour
--   B:worker:<w>     HASH   one worker's row; B:workers ZSET of ids by expires_at
--   B:leader:<l>     HASH   holder epoch expires_at
--   B:task:<t>       HASH   cron <t>'s watermark last_fire_at last_job_id (the key keeps
--                           its stored name)
--   B:steps:<id>     HASH   one job's steps, deleted with it: step name -> JSON object of name
--                           seq kind status output error event key wait_since wait_until
--                           updated_at (output and error as JSON text, times and seq as text)
--   B:waits:<e>      ZSET   the waiting steps on event and key <e> ("<len>:<event><key>", as
--                           B:keys spells a name and key), "<id>\t<step>" by wait_since
--   B:event:<eid>    HASH   one event: name key payload tenant created_at expires_at
--   B:events:<e>     ZSET   the events of event and key <e>, ids (15 digits) by created_at
--   B:event_expiry   ZSET   every event id by expires_at (the purge's order)
--   B:event_seq      STRING the last event id given
--   B:finished:<s>   ZSET   finished jobs of state <s> by finished_at (the purge's order)
--   B:counter_rows:<p> ZSET the rows of B:counters:<p>, "<bucket seconds>\t<name>" by bucket
--                           seconds (the purge's order)
--   B:lease:<k>      HASH   the lease rows of lease key <k> (as the model spells it: job:<name>,
--                           job-key:<name>:<key>, rate:<name>, rate-key:<name>:<key>): slot ->
--                           "<kind>\t<job id>\t<claim token>\t<acquired_at>\t<expires_at>"; a
--                           key of rate stamps only expires (Redis TTL) a second after its last
--                           stamp, a key with a concurrency row never
--   B:slots:<id>     SET    the concurrency slots a running job took, "<slot>\t<lease key>";
--                           freed and deleted when the job leaves running
--   B:backfill:<r>   HASH   one backfill run <r>: name scope run_id environment status cursor
--                           rows_done batches_done error started_at updated_at finished_at
--   B:backfills      ZSET   every run id by its start's number (B:backfill_seq)
--   B:backfill_done  HASH   "<len>:<name><scope>" (as B:keys spells them) -> the completed run
--   B:idle:<q>       ZSET   the workers whose last claim on <q> found fewer jobs than it asked
--                           for, by that claim's time (a single enqueue wakes one of them)
--   B:wake           pub/sub channel: the queue of each enqueue due now that woke no idle worker
--   B:wake:<w>       pub/sub channel of worker <w>: the queue of an enqueue that woke it alone
--   B:hands          HASH   idle worker -> "<lease seconds> <room>": the lease its last claim
--                           gave, and how many jobs it may still be handed (that claim found
--                           that many fewer than it asked for, less the hands since)
--   B:handed:<w>     HASH   job id -> claim token of the jobs handed to worker <w> since its
--                           last claim (which answers them again: a lost message); it expires
--                           with the last one's lease
--   B:hand:<w>       pub/sub channel of worker <w>: a job a single enqueue claimed for it, as
--                           a claim row in JSON

local B = KEYS[1]
local PRIORITY_SPAN = 1e13

local function now_us()
    local t = redis.call('TIME')
    return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- An integer as text, never in exponent form (Lua's tostring keeps 14 digits only). Each
-- number is formatted once per script run: a batch writes the same few times (now, a lease's
-- end, an attempt, a minute) for every job, and formatting is most of what a number costs.
local FORMATTED = {}

local function fmt(n)
    local text = FORMATTED[n]
    if text == nil then
        text = string.format('%.0f', n)
        FORMATTED[n] = text
    end
    return text
end

-- Seconds (a number, or its text) as whole microseconds, rounded to the nearest.
local function us(seconds)
    return math.floor(tonumber(seconds) * 1000000 + 0.5)
end

-- A due moment: ``at`` (microseconds, as text) when given, else now plus ``seconds`` (none: 0).
local function at_or_after(at, seconds, now)
    if at then return tonumber(at) end
    return now + us(seconds or '0')
end

-- An optional argument: '' is null, '=text' is text (so an empty string stays a value).
local function opt(text)
    if text == nil or text == '' then return nil end
    return string.sub(text, 2)
end

-- Index writes held back within one script: a batch collects, per index key and command
-- (ZADD, ZREM, SADD, SREM), the members written, and `flush` sends each as one variadic command;
-- it also collects the jobs that left running (their concurrency slots are freed at the flush)
-- and the counters to add. A script passes a batch only where it reads no index key between a
-- held write and the flush, and never both adds and removes one member of one key in it.
local function new_batch()
    return {order = {}, ops = {}, left_running = {}, counts = {}, count_order = {}, paused = {}}
end

local function index(batch, command, key, a, b)
    if batch == nil then
        if b == nil then return redis.call(command, key, a) end
        return redis.call(command, key, a, b)
    end
    local by_key = batch.ops[command]
    if by_key == nil then
        by_key = {}
        batch.ops[command] = by_key
    end
    local members = by_key[key]
    if members == nil then
        members = {}
        by_key[key] = members
        batch.order[#batch.order + 1] = {command, key, members}
    end
    members[#members + 1] = a
    if b ~= nil then members[#members + 1] = b end
end

-- A variadic command on `key` over a long list, a thousand arguments a call (an even count,
-- so ZADD's score and member pairs stay whole).
local function each_thousand(command, key, args)
    for i = 1, #args, 1000 do
        redis.call(command, key, unpack(args, i, math.min(i + 999, #args)))
    end
end

local function jkey(id) return B .. ':job:' .. id end
local function skey(id) return B .. ':steps:' .. id end

local function live_field(name, key)
    return string.len(name) .. ':' .. name .. key
end

-- A timestamp as PostgreSQL writes a timestamptz into jsonb in a UTC session.
local function iso(us)
    local secs = math.floor(us / 1000000)
    local frac = us - secs * 1000000
    local days = math.floor(secs / 86400)
    local rem = secs - days * 86400
    local z = days + 719468
    local era = math.floor(z / 146097)
    local doe = z - era * 146097
    local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524)
        - math.floor(doe / 146096)) / 365)
    local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
    local mp = math.floor((5 * doy + 2) / 153)
    local d = doy - math.floor((153 * mp + 2) / 5) + 1
    local m = mp < 10 and mp + 3 or mp - 9
    local y = yoe + era * 400
    if m <= 2 then y = y + 1 end
    local text = string.format('%04d-%02d-%02dT%02d:%02d:%02d', y, m, d,
        math.floor(rem / 3600), math.floor((rem % 3600) / 60), rem % 60)
    if frac > 0 then
        text = text .. (string.gsub(string.format('.%06d', frac), '0+$', ''))
    end
    return text .. '+00:00'
end

-- Append one entry (a JSON object's text) to a JSON array's text, with extra members.
local function append_entry(errors, entry, extra)
    local object = string.sub(entry, 1, -2)
    if object ~= '{' then object = object .. ',' end
    object = object .. extra .. '}'
    if errors == nil or errors == '[]' or errors == false then return '[' .. object .. ']' end
    return string.sub(errors, 1, -2) .. ',' .. object .. ']'
end

local function is_paused(scope, target)
    return redis.call('HEXISTS', B .. ':pauses', scope .. '\t' .. target) == 1
end

local function ready_score(priority, run_at)
    return (100 - priority) * PRIORITY_SPAN + math.floor(run_at / 1000)
end

-- Put a queued job where the claim finds it: held (its name paused), ready (due), or delayed
-- (due later; a claim promotes it). `fresh`: a new job, in none of these yet. With a batch,
-- the index writes wait for its flush and each name's pause is read once.
local function place(id, queue, name, priority, run_at, now, fresh, batch)
    index(batch, 'ZADD', B .. ':queued:' .. queue, run_at, id)
    local ready, delayed = B .. ':ready:' .. queue, B .. ':delayed:' .. queue
    local paused
    if batch then
        paused = batch.paused[name]
        if paused == nil then
            paused = is_paused('job', name)
            batch.paused[name] = paused
        end
    else
        paused = is_paused('job', name)
    end
    if paused then
        if not fresh then
            index(batch, 'ZREM', ready, id)
            index(batch, 'ZREM', delayed, id)
        end
        index(batch, 'SADD', B .. ':held:' .. name, id)
    elseif run_at <= now then
        index(batch, 'ZADD', ready, ready_score(priority, run_at), id)
        if not fresh then index(batch, 'ZREM', delayed, id) end
    else
        if not fresh then index(batch, 'ZREM', ready, id) end
        index(batch, 'ZADD', delayed, run_at, id)
    end
end

-- Take a queued job out of the claim's sets. `ready`: it is known to be in the ready set (a
-- claim found it there), so neither delayed nor held holds it (a queued job is in one of them).
local function unplace(id, queue, name, batch, ready)
    index(batch, 'ZREM', B .. ':queued:' .. queue, id)
    index(batch, 'ZREM', B .. ':ready:' .. queue, id)
    if ready then return end
    index(batch, 'ZREM', B .. ':delayed:' .. queue, id)
    index(batch, 'SREM', B .. ':held:' .. name, id)
end

-- Move the queue's delayed jobs that fell due into its ready set (or held).
local function promote(queue, now)
    local due = redis.call('ZRANGEBYSCORE', B .. ':delayed:' .. queue, '-inf', fmt(now))
    for _, id in ipairs(due) do
        local row = redis.call('HMGET', jkey(id), 'name', 'priority', 'run_at')
        place(id, queue, row[1], tonumber(row[2]), tonumber(row[3]), now)
    end
end

-- Walk a queue's ready set in claim order, moving the jobs of paused names to their held
-- sets, and answer up to `limit` claimable ids, each as {id, score}. `scores`: read the scores
-- (they order the heads of several queues); without, each is {id} (one queue's order is the
-- claim order, and Redis formats every score as a 17-digit double for the script to parse).
local function claimable(queue, limit, scores)
    local found = {}
    local check = redis.call('SCARD', B .. ':paused_jobs') > 0
    local step = scores and 2 or 1
    local start = 0
    while #found < limit do
        local window
        if scores then
            window = redis.call('ZRANGE', B .. ':ready:' .. queue, start, start + limit - 1,
                'WITHSCORES')
        else
            window = redis.call('ZRANGE', B .. ':ready:' .. queue, start, start + limit - 1)
        end
        if #window == 0 then break end
        local moved = 0
        for i = 1, #window, step do
            local id = window[i]
            local name = check and redis.call('HGET', jkey(id), 'name')
            if check and redis.call('SISMEMBER', B .. ':paused_jobs', name) == 1 then
                redis.call('ZREM', B .. ':ready:' .. queue, id)
                redis.call('SADD', B .. ':held:' .. name, id)
                moved = moved + 1
            elseif #found < limit then
                found[#found + 1] = {id, scores and tonumber(window[i + 1])}
            end
        end
        start = start + #window / step - moved
    end
    return found
end

-- The jobs ready to claim now on a queue, counted up to `bound` (QUEUE_DEMAND_ROWS).
local function demand(queue, now, bound)
    if is_paused('queue', queue) then return 0 end
    promote(queue, now)
    if redis.call('SCARD', B .. ':paused_jobs') == 0 then
        return math.min(redis.call('ZCARD', B .. ':ready:' .. queue), bound)
    end
    return #claimable(queue, bound)
end

local COUNTED = {completed = true, retried = true, dead = true, dropped = true,
    refused = true, cancelled = true}

-- Count one outcome of job name `name` in its minute (with a batch: at its flush).
local function count(name, now, outcome, batch)
    assert(COUNTED[outcome], 'unknown counter ' .. outcome)
    local bucket = fmt(math.floor(now / 60000000) * 60)
    local field = bucket .. '\t' .. outcome .. '\t' .. name
    if batch == nil then
        redis.call('HINCRBY', B .. ':counters:minute', field, 1)
        redis.call('ZADD', B .. ':counter_rows:minute', bucket, bucket .. '\t' .. name)
        return
    end
    local counts = batch.counts
    if counts[field] == nil then
        counts[field] = 0
        batch.count_order[#batch.count_order + 1] = {field, bucket, bucket .. '\t' .. name}
    end
    counts[field] = counts[field] + 1
end

-- A lease row (B:lease:<k>) as a table, and back.
local function lease_row(text)
    local kind, job, token, acquired, expires = string.match(text,
        '^(%a+)\t([^\t]*)\t([^\t]*)\t(%d+)\t(%d+)$')
    return {kind = kind, job = job, token = token, acquired = tonumber(acquired),
        expires = tonumber(expires)}
end

local function lease_text(r)
    return r.kind .. '\t' .. r.job .. '\t' .. r.token .. '\t' .. fmt(r.acquired) .. '\t'
        .. fmt(r.expires)
end

-- Write one lease row. A key of rate stamps only expires a second after its last stamp (an
-- expired stamp is free, so nothing is lost); a key that holds a concurrency row never does.
local function lease_put(key, slot, r, now)
    local lkey = B .. ':lease:' .. key
    local ttl = redis.call('PTTL', lkey)
    redis.call('HSET', lkey, slot, lease_text(r))
    if r.kind == 'concurrency' then
        if ttl >= 0 then redis.call('PERSIST', lkey) end
        return
    end
    local until_ms = math.floor(r.expires / 1000) + 1000
    if ttl == -2 or (ttl >= 0 and math.floor(now / 1000) + ttl < until_ms) then
        redis.call('PEXPIREAT', lkey, fmt(until_ms))
    end
end

-- Each concurrency slot job `id` took, fenced by `token` unless it is nil: the callback gets
-- the lease hash, the slot, the row and the B:slots member.
local function slots_each(id, token, each)
    for _, place in ipairs(redis.call('SMEMBERS', B .. ':slots:' .. id)) do
        local slot, key = string.match(place, '^(%d+)\t(.*)$')
        local lkey = B .. ':lease:' .. key
        local text = redis.call('HGET', lkey, slot)
        local r = text and lease_row(text)
        if r and r.kind == 'concurrency' and r.job == id and (token == nil or r.token == token) then
            each(lkey, slot, r, place)
        end
    end
end

-- Delete the concurrency slots job `id` holds (its attempt's, or with `token` only that
-- attempt's); answers how many went. Without a token the job's B:slots set goes too.
local function slots_free(id, token)
    local n = 0
    slots_each(id, token, function(lkey, slot, _, place)
        redis.call('HDEL', lkey, slot)
        redis.call('SREM', B .. ':slots:' .. id, place)
        n = n + 1
    end)
    if token == nil then redis.call('DEL', B .. ':slots:' .. id) end
    return n
end

-- A job's stored step (a table of the fields the key layout names), or nil.
local function step_load(id, name)
    local text = redis.call('HGET', skey(id), name)
    if not text then return nil end
    return cjson.decode(text)
end

-- Store a step and keep B:waits in step with it: a waiting step on an event is listed there,
-- any other is not.
local function step_save(id, step)
    redis.call('HSET', skey(id), step.name, cjson.encode(step))
    if step.event then
        local waits = B .. ':waits:' .. live_field(step.event, step.key)
        if step.status == 'waiting' then
            redis.call('ZADD', waits, step.wait_since, id .. '\t' .. step.name)
        else
            redis.call('ZREM', waits, id .. '\t' .. step.name)
        end
    end
end

-- The id of the first event of a waiting step's event and key sent at or after its wait began
-- (ties by id, the order events were sent), or nil; a sleep matches none.
local function step_match(step)
    if not step.event then return nil end
    local found = redis.call('ZRANGEBYSCORE', B .. ':events:' .. live_field(step.event, step.key),
        step.wait_since, '+inf', 'LIMIT', 0, 1)
    return found[1]
end

-- Delete a job's steps (with the job: PostgreSQL's cascade), and its waits from B:waits.
local function steps_drop(id)
    for _, text in ipairs(redis.call('HVALS', skey(id))) do
        local step = cjson.decode(text)
        if step.status == 'waiting' and step.event then
            redis.call('ZREM', B .. ':waits:' .. live_field(step.event, step.key),
                id .. '\t' .. step.name)
        end
    end
    redis.call('DEL', skey(id))
end

local LIVE = {queued = true, running = true}
local FINISHED = {completed = true, failed = true, cancelled = true}

-- Change a job's state (to = nil deletes it), keeping every index in step. `row` holds the
-- job's name, queue, priority, run_at, key, created_at and lease_expires_at as they are to be
-- after the move (and `ready` when a queued job is known to be in its ready set); `fields`
-- (optional: field, value, ...) are written with the state, the caller writes any other. With a `batch` (new_batch) the index writes wait for its flush.
local function move(id, from, to, row, now, batch, fields)
    local k = jkey(id)
    if from == 'queued' then
        unplace(id, row.queue, row.name, batch, row.ready)
    elseif from == 'running' then
        index(batch, 'ZREM', B .. ':running', id)
        -- limits: the run's concurrency slots go with it
        if batch then batch.left_running[#batch.left_running + 1] = id else slots_free(id, nil) end
    elseif FINISHED[from] then
        index(batch, 'ZREM', B .. ':done:' .. from .. ':' .. row.name, id)
        index(batch, 'ZREM', B .. ':finished:' .. from, id)
    end
    local field = row.key and live_field(row.name, row.key)
    local was_live, is_live = LIVE[from] or false, (to and LIVE[to]) or false
    if field and was_live and not is_live and redis.call('HGET', B .. ':keys', field) == id then
        redis.call('HDEL', B .. ':keys', field)
    end
    if to == nil then
        redis.call('DEL', k)
        steps_drop(id)
        redis.call('ZREM', B .. ':jobs', id)
        return
    end
    redis.call('HSET', k, 'state', to, unpack(fields or {}))
    if field and is_live and not was_live then
        redis.call('HSET', B .. ':keys', field, id)
    end
    if to == 'queued' then
        place(id, row.queue, row.name, row.priority, row.run_at, now, from == nil, batch)
    elseif to == 'running' then
        index(batch, 'ZADD', B .. ':running', fmt(row.lease_expires_at), id)
    else
        -- every move to a finished state writes finished_at = now
        index(batch, 'ZADD', B .. ':done:' .. to .. ':' .. row.name, fmt(row.created_at), id)
        index(batch, 'ZADD', B .. ':finished:' .. to, fmt(now), id)
    end
end

-- Send what a batch held back: its index writes, the freeing of the concurrency slots of the
-- jobs that left running (none held any, in one EXISTS, is the usual answer), its counters.
local function flush(batch)
    for _, entry in ipairs(batch.order) do
        each_thousand(entry[1], entry[2], entry[3])
    end
    local left = batch.left_running
    for i = 1, #left, 1000 do
        local keys = {}
        for j = i, math.min(i + 999, #left) do keys[#keys + 1] = B .. ':slots:' .. left[j] end
        if redis.call('EXISTS', unpack(keys)) > 0 then
            for j = i, math.min(i + 999, #left) do slots_free(left[j], nil) end
        end
    end
    for _, entry in ipairs(batch.count_order) do
        redis.call('HINCRBY', B .. ':counters:minute', entry[1], batch.counts[entry[1]])
        redis.call('ZADD', B .. ':counter_rows:minute', entry[2], entry[3])
    end
end

-- The fields `move` needs, read from the job's hash (nil for a missing job).
local function load(id)
    local r = redis.call('HMGET', jkey(id), 'state', 'name', 'queue', 'priority', 'run_at',
        'key', 'created_at', 'lease_expires_at', 'claim_token', 'attempt', 'worker_id',
        'lease_seconds', 'errors')
    if not r[1] then return nil end
    return {state = r[1], name = r[2], queue = r[3], priority = tonumber(r[4]),
        run_at = tonumber(r[5]), key = r[6] or nil, created_at = tonumber(r[7]),
        lease_expires_at = tonumber(r[8]), claim_token = r[9] or nil,
        attempt = tonumber(r[10]), worker_id = r[11] or nil,
        lease_seconds = tonumber(r[12]), errors = r[13] or '[]'}
end

-- The row a fenced write may touch: running under that claim token.
local function owned(id, token)
    local row = load(id)
    if row == nil or row.state ~= 'running' or row.claim_token ~= token then return nil end
    return row
end

-- The fields `move` and `count` need to finish a running job, read only when it is running under
-- that claim token (an ack's fence): a lighter `owned`.
local function owned_to_finish(id, token)
    local r = redis.call('HMGET', jkey(id), 'state', 'claim_token', 'name', 'key', 'created_at')
    if r[1] ~= 'running' or r[2] ~= token then return nil end
    return {name = r[3], key = r[4] or nil, created_at = tonumber(r[5])}
end

local function set_optional(k, field, value)
    if value == nil then redis.call('HDEL', k, field) else redis.call('HSET', k, field, value) end
end

local function wake(queues)
    for queue, _ in pairs(queues) do
        redis.call('PUBLISH', B .. ':wake', queue)
    end
end

-- The variant digit of a version 4 UUID (8, 9, a or b) from a random hex digit.
local VARIANT = {['0'] = '8', ['1'] = '9', ['2'] = 'a', ['3'] = 'b', ['4'] = '8', ['5'] = '9',
    ['6'] = 'a', ['7'] = 'b', ['8'] = '8', ['9'] = '9', a = 'a', b = 'b', c = '8', d = '9',
    e = 'a', f = 'b'}

-- A claim token from 32 random hex digits (the i-th 32 of `random`): a version 4 UUID's text.
local function claim_token(random, i)
    local h = string.sub(random, i * 32 - 31, i * 32)
    local variant = VARIANT[string.sub(h, 17, 17)]
    return string.sub(h, 1, 8) .. '-' .. string.sub(h, 9, 12) .. '-4' .. string.sub(h, 14, 16)
        .. '-' .. variant .. string.sub(h, 18, 20) .. '-' .. string.sub(h, 21, 32)
end

-- Claim one queued job of the ready set for `worker_id` under `token` (job_claim, and the hand
-- of a single enqueue): running, its attempt counted, its lease the job's own seconds or
-- `lease_default`.
-- Answers the claim's row, the fields of the worker's ClaimedJob (codec.CLAIMED_FIELDS): id
-- name queue input attempt max_attempts claim_token priority tenant traceparent; and the
-- lease's end (microseconds).
local function claim_one(id, queue, worker_id, lease_default, token, now, batch)
    -- Only what the answer and the lease need: a move from queued to running reads no other
    -- field of `row` (the job stays live, so its idempotency key stays where it is).
    local r = redis.call('HMGET', jkey(id), 'name', 'priority', 'lease_seconds', 'attempt',
        'input', 'max_attempts', 'tenant', 'traceparent')
    local seconds = tonumber(r[3]) or lease_default
    local lease = now + math.floor(seconds * 1000000 + 0.5)
    local attempt = tonumber(r[4]) + 1
    local row = {name = r[1], queue = queue, lease_expires_at = lease, ready = true}
    move(id, 'queued', 'running', row, now, batch, {'attempt', fmt(attempt), 'claim_token', token,
        'worker_id', worker_id, 'started_at', fmt(now), 'body_pending', '0',
        'lease_expires_at', fmt(lease)})
    return {id, r[1], queue, r[5], attempt, r[6], token, r[2], r[7], r[8]}, lease
end

-- Up to `limit` jobs handed to `worker_id` (see hand_to) that it still runs under their
-- token, as claim rows marked 'handed' (an 11th field), and forgotten (the rest wait for the
-- next claim): a claim of that worker answers them too, in case the message of a hand was lost
-- (pub/sub delivers at most once).
local function handed_take(worker_id, limit)
    local handed = B .. ':handed:' .. worker_id
    local notes = redis.call('HGETALL', handed)
    local rows, seen = {}, {}
    for i = 1, #notes, 2 do
        if #rows >= limit then break end
        local id, token = notes[i], notes[i + 1]
        seen[#seen + 1] = id
        local r = redis.call('HMGET', jkey(id), 'state', 'claim_token', 'worker_id', 'name',
            'queue', 'input', 'attempt', 'max_attempts', 'priority', 'tenant', 'traceparent')
        if r[1] == 'running' and r[2] == token and r[3] == worker_id then
            rows[#rows + 1] = {id, r[4], r[5], r[6], tonumber(r[7]), tonumber(r[8]), token,
                tonumber(r[9]), r[10], r[11], 'handed'}
        end
    end
    if #seen > 0 then redis.call('HDEL', handed, unpack(seen)) end
    return rows
end

-- Hand the job `hand` (handable) to idle worker `worker`: claimed in its name as its claim
-- would (lease: the seconds its last claim gave), noted in B:handed:<w> until its next claim,
-- and sent whole on its channel B:hand:<w>. Only to a worker listening there now, and no more
-- jobs between two of its claims than the last one found fewer than it asked for (its room,
-- B:hands); answers whether it was handed.
local function hand_to(worker, queue, hand)
    local channel = B .. ':hand:' .. worker
    local hands = B .. ':hands'
    local entry = redis.call('HGET', hands, worker)
    if not entry then return false end
    if redis.call('PUBSUB', 'NUMSUB', channel)[2] == 0 then
        redis.call('HDEL', hands, worker)  -- not listening (gone): its next claim lists it again
        return false
    end
    local lease, room = string.match(entry, '^(%S+) (%d+)$')
    if tonumber(room) > 1 then
        redis.call('HSET', hands, worker, lease .. ' ' .. (tonumber(room) - 1))
    else
        redis.call('HDEL', hands, worker)
    end
    local batch = new_batch()
    local row, ends = claim_one(hand.id, queue, worker, tonumber(lease), hand.token, hand.now,
        batch)
    flush(batch)
    local handed = B .. ':handed:' .. worker
    redis.call('HSET', handed, hand.id, hand.token)
    -- past the lease, the rescue owns the job: the note goes then at the latest
    redis.call('PEXPIREAT', handed, fmt(math.floor(ends / 1000) + 1000))
    redis.call('PUBLISH', channel, cjson.encode(row))
    return true
end

-- Whether a single enqueue's job `hand` (id, random: 32 hex digits for its claim token, now)
-- may be handed: it heads its queue's ready set (due now, its name not paused, nothing before
-- it in claim order) on a queue not paused. Sets hand.token when it may.
local function handable(hand, queue)
    if hand.token == nil then
        if hand.random == nil or hand.random == '' or is_paused('queue', queue) then
            hand.token = false
        else
            promote(queue, hand.now)
            local head = redis.call('ZRANGE', B .. ':ready:' .. queue, 0, 0)[1]
            hand.token = head == hand.id and claim_token(hand.random, 1)
        end
    end
    return hand.token ~= false
end

-- Wake one worker for one job due now on `queue`: the one idle there most recently, on its own
-- channel, so the others sleep on (every subscriber woken for one job makes all but one claim
-- nothing). With a `hand` ({id, random, now} of a single enqueue) the job, when handable, is
-- claimed for it and handed over whole, so it needs no claim of its own (hand_to). A listed worker that no longer listens (PUBLISH
-- reached nobody: it stopped, or its wake reconnects) is dropped and the next tried; with none
-- left, every subscriber is woken.
local WAKE_ONE_TRIES = 8

local function wake_one(queue, hand)
    local idle = B .. ':idle:' .. queue
    for _ = 1, WAKE_ONE_TRIES do
        local top = redis.call('ZPOPMAX', idle)
        if top[1] == nil then break end
        if hand and handable(hand, queue) and hand_to(top[1], queue, hand) then return end
        if redis.call('PUBLISH', B .. ':wake:' .. top[1], queue) > 0 then return end
    end
    redis.call('PUBLISH', B .. ':wake', queue)
end

-- One job from 13 arguments at `at` (job_enqueue, job_enqueue_many, scheduler_fire): written
-- unless a job has its id or a live job its name and idempotency key. Answers the status, the
-- id and whether the job is due now by request (no run_at, no delay): the wake rule.
local ENQUEUE_FIELDS = 13

local function enqueue_one(a, at, now, batch)
    local id, name, queue = a[at], a[at + 1], a[at + 2]
    local priority, run_at, delay = tonumber(a[at + 3]), opt(a[at + 4]), opt(a[at + 5])
    local input, key, tenant, by = a[at + 6], opt(a[at + 7]), opt(a[at + 8]), opt(a[at + 9])
    local max_attempts, lease, trace = a[at + 10], opt(a[at + 11]), opt(a[at + 12])
    local k = jkey(id)
    if redis.call('EXISTS', k) == 1 then return 'deduped', id, false end
    if key then
        local holder = redis.call('HGET', B .. ':keys', live_field(name, key))
        if holder then return 'deduped', holder, false end
    end
    local due = at_or_after(run_at, delay, now)
    local fields = {'name', name, 'queue', queue, 'priority', priority, 'run_at', fmt(due),
        'input', input, 'attempt', 0, 'max_attempts', max_attempts, 'errors', '[]',
        'created_at', fmt(now), 'body_pending', 0}
    local optional = {'key', key, 'tenant', tenant, 'enqueued_by', by, 'lease_seconds', lease,
        'traceparent', trace}
    for i = 1, 9, 2 do
        if optional[i + 1] then
            fields[#fields + 1] = optional[i]
            fields[#fields + 1] = optional[i + 1]
        end
    end
    index(batch, 'ZADD', B .. ':jobs', now, id)
    index(batch, 'SADD', B .. ':queues', queue)
    index(batch, 'SADD', B .. ':names', name)
    move(id, nil, 'queued', {name = name, queue = queue, priority = priority, run_at = due,
        key = key}, now, batch, fields)
    local by_request = run_at == nil and (delay == nil or tonumber(delay) == 0)
    return 'created', id, by_request
end

-- ---------------------------------------------------------------------------------------------
