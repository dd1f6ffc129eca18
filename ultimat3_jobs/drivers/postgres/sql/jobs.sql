-- fragment: job_row_columns
-- The columns of one job to insert, as every source of rows answers them (job_param_row,
-- job_batch_rows, a fired occurrence); ord keeps a batch's order.
id, name, queue, priority, run_at, delay_seconds, input, idempotency_key, tenant_id,
enqueued_by, max_attempts, lease_seconds, traceparent, ord

-- fragment: job_param_row
-- One job from the single-job parameters, typed as the batch arrays are.
select %(id)s::uuid, %(name)s::text, %(queue)s::text, %(priority)s::int,
       %(run_at)s::timestamptz, %(delay_seconds)s::float8, %(input)s::text,
       %(idempotency_key)s::text, %(tenant_id)s::text, %(enqueued_by)s::text,
       %(max_attempts)s::int, %(lease_seconds)s::int, %(traceparent)s::text, 1::bigint

-- fragment: job_batch_rows
-- Up to 1,000 jobs as one array parameter per column, never thousands of placeholders.
unnest(
    %(ids)s::uuid[], %(names)s::text[], %(queues)s::text[], %(priorities)s::int[],
    %(run_ats)s::timestamptz[], %(delays)s::float8[], %(inputs)s::text[], %(keys)s::text[],
    %(tenants)s::text[], %(enqueued_bys)s::text[], %(max_attempts)s::int[],
    %(lease_seconds)s::int[], %(traceparents)s::text[]
) with ordinality as r({{job_row_columns}})

-- fragment: job_columns
-- What a job carries from its request to its row, in x_jobs and in x_outbox alike.
id, name, queue, priority, run_at, input, idempotency_key, tenant_id, enqueued_by,
max_attempts, lease_seconds, traceparent, created_at

-- fragment: job_values
-- The values of job_columns but created_at, from a row r of job_row_columns: due at run_at, else
-- after delay_seconds, else now.
r.id, r.name, r.queue, r.priority,
       coalesce(r.run_at, now() + make_interval(secs => coalesce(r.delay_seconds, 0))),
       r.input::jsonb, r.idempotency_key, r.tenant_id, r.enqueued_by,
       r.max_attempts, r.lease_seconds, r.traceparent

-- fragment: priority_level_walk
-- The ready priority levels of each queue q (its source is the statement's, after "from"),
-- highest first, one index descent per level (a loose index scan): the recursive levels CTE of
-- job_claim and of queue_levels.
cross join lateral (
        select j.priority from x_jobs j
        where j.queue = q.name and j.state = 'queued' and not j.paused
        order by j.priority desc
        limit 1
    ) as top
    union all
    select l.queue, below.priority
    from levels l
    cross join lateral (
        select j.priority from x_jobs j
        where j.queue = l.queue and j.state = 'queued' and not j.paused
          and j.priority < l.priority
        order by j.priority desc
        limit 1
    ) as below

-- fragment: queue_levels
-- The ready priority levels of each queue, highest first, one index descent per level (the
-- claim's seek): queue_demand and worker_heartbeat count their demand over it.
levels as (
    select q.name as queue, top.priority
    from unnest(%(queues)s::text[]) as q(name)
    {{priority_level_walk}}
)

-- fragment: queue_ready
-- The ready jobs of queue q.name, counted up to limit over the levels (queue_levels): 0 when
-- the queue is paused, and the rows of a paused job name never count.
case when exists (select 1 from x_job_pauses p where p.scope = 'queue' and p.target = q.name)
     then 0
     else (select count(*) from (
              select 1
              from levels l
              cross join lateral (
                  select 1 from x_jobs j
                  where j.queue = l.queue and j.priority = l.priority and j.state = 'queued'
                    and not j.paused and j.run_at <= now()
                    and not exists (
                        select 1 from x_job_pauses p where p.scope = 'job' and p.target = j.name
                    )
                  limit %(limit)s
              ) as due
              where l.queue = q.name
              limit %(limit)s) as ready)
end

-- fragment: job_insert(rows, ending)
-- The one job INSERT (job_enqueue, job_enqueue_many, job_enqueue_shared, job_enqueue_minted,
-- scheduler_fire; the relay publishes through job_enqueue_many), from the rows $rows (a CTE of
-- job_row_columns), in their order, ended by $ending: job_insert_deduped, or job_insert_minted
-- for rows that can conflict with none. A job whose name is paused is flagged paused (out of the
-- claim index), from one read of the job pauses per statement; the key-share lock on the pause
-- row makes a resume wait for this commit, so the resume's unflag sees the row.
insert into x_jobs ({{job_columns}}, paused)
select {{job_values}}, now(),
       r.name = any ({{job_paused_names(rows=$rows)}})
from $rows r
order by r.ord
{{$ending}}

-- fragment: job_paused_names(rows)
-- The names of $rows (rows with a name column) whose jobs are paused, each pause row locked
-- key-share: a resume waits for the commit of the rows flagged, so its unflag sees them.
select p.target from x_job_pauses p
where p.scope = 'job' and p.target in (select n.name from $rows n)
for key share

-- fragment: job_insert_deduped
-- An untargeted ON CONFLICT DO NOTHING covers both unique indexes: the primary key (a
-- republished outbox row keeps its id) and x_jobs_live_key (a live row with the same name and
-- idempotency key); rows inserted earlier in the same statement count. The rows inserted come
-- back, for the statement's answer.
on conflict do nothing
returning id, queue

-- fragment: job_insert_minted
-- No conflict clause and nothing returned (job_enqueue_minted): every row is inserted, or a
-- taken id or key fails the statement.
-- (no text)

-- fragment: job_batch_insert
-- The rest of a batch enqueue after its job_rows CTE: the one job INSERT (job_insert), whose
-- rows inserted earlier in the same statement count, so a key repeated within the batch dedupes
-- to its first row; one wake per queue the driver names in notify_queues, never one per job. One
-- row back: how many rows were inserted, and their ids only when some were skipped (a batch
-- usually inserts every row, and its ids are then the requests' own).
inserted as (
    {{job_insert(rows=job_rows, ending=job_insert_deduped)}}
), woken as (
    select pg_notify('ultimat3_jobs', w.queue)
    from (select distinct queue from inserted where queue = any(%(notify_queues)s::text[])) as w
)
select count(*) as created,
       case when count(*) < (select count(*) from job_rows) then array_agg(i.id) end as ids
from inserted i
where (select count(*) from woken) >= 0

-- name: job_enqueue
-- One round trip in the common case, through the one job INSERT (job_insert: its conflict rule,
-- its pause flag); job_enqueue_resolve answers which unique index skipped a row. It wakes
-- listening workers (delivered at commit, dropped on rollback) only when the caller asks: every
-- notifying commit serialises on one lock, so the driver asks once per queue per short slot. The
-- payload is the queue and the job's id: an idle worker claims that row (job_claim_notified).
with job_rows({{job_row_columns}}) as (
    {{job_param_row}}
), inserted as (
    {{job_insert(rows=job_rows, ending=job_insert_deduped)}}
)
select i.id, (select pg_notify('ultimat3_jobs', i.queue || ' ' || i.id) where %(notify)s)
from inserted i

-- name: job_enqueue_resolve
-- A skipped insert: the row that holds the id wins over the live row that holds the key.
select j.id
from x_jobs j
where j.id = %(id)s
   or (%(idempotency_key)s::text is not null
       and j.name = %(name)s
       and j.idempotency_key = %(idempotency_key)s
       and j.state in ('queued', 'running'))
order by (j.id = %(id)s) desc
limit 1

-- name: job_enqueue_many
-- Up to 1,000 jobs in one statement (job_batch_rows), through the one job INSERT
-- (job_batch_insert). The relay's batches take this form; one enqueue_many call's jobs take
-- job_enqueue_shared.
with job_rows({{job_row_columns}}) as (
    select {{job_row_columns}} from {{job_batch_rows}}
), {{job_batch_insert}}

-- fragment: job_shared_rows
-- Up to 1,000 jobs that differ only in id, input and tenant, as the jobs of one enqueue_many
-- call do: those three columns as arrays, every other one a single parameter named as
-- job_enqueue names it: the server parses and unnests 3 arrays instead of 13, about an eighth
-- of the statement's time.
select r.id, %(name)s::text, %(queue)s::text, %(priority)s::int, %(run_at)s::timestamptz,
       %(delay_seconds)s::float8, r.input, %(idempotency_key)s::text, r.tenant_id,
       %(enqueued_by)s::text, %(max_attempts)s::int, %(lease_seconds)s::int,
       %(traceparent)s::text, r.ord
from unnest(%(ids)s::uuid[], %(inputs)s::text[], %(tenants)s::text[])
     with ordinality as r(id, input, tenant_id, ord)

-- name: job_enqueue_shared
-- job_enqueue_many for up to 1,000 jobs of one definition and one set of options
-- (job_shared_rows) whose ids or key may be taken: a relay's batch, or a batch with a key.
with job_rows({{job_row_columns}}) as (
    {{job_shared_rows}}
), {{job_batch_insert}}

-- name: job_enqueue_minted
-- job_enqueue_shared for the jobs of one enqueue_many call with no idempotency key: the call
-- minted their ids (new_job_ids), so no row holds one, and without a key x_jobs_live_key cannot
-- match them. The one job INSERT then takes no conflict clause (job_insert_minted): no
-- speculative insertion and no confirm record per row (measured at 1,000 jobs: a fifth of the
-- statement's time and of its WAL); a taken id fails the statement rather than answer another
-- job's row. The rows are read from the arrays where the INSERT reads them (not materialized: no
-- copy, and the ordinality keeps their order with no sort). Every row is inserted or the
-- statement fails, so it answers the batch's size (job_batch_insert's answer, all created); one
-- wake per queue the driver names in notify_queues, as job_batch_insert sends.
with minted_rows({{job_row_columns}}) as not materialized (
    {{job_shared_rows}}
), inserted as (
    {{job_insert(rows=minted_rows, ending=job_insert_minted)}}
), woken as (
    select pg_notify('ultimat3_jobs', q.queue) from unnest(%(notify_queues)s::text[]) as q(queue)
)
select %(size)s::bigint as created, null::uuid[] as ids
where (select count(*) from woken) >= 0

-- name: job_copy_paused
-- Whether the jobs job_enqueue_copy writes (one name) are paused, read as the one job INSERT
-- (job_insert) reads it (job_paused_names), in the same transaction as the COPY.
with copy_names(name) as (select %(name)s::text)
select exists ({{job_paused_names(rows=copy_names)}}) as paused

-- name: job_enqueue_copy
-- job_enqueue_minted for a call of more than one chunk of jobs due now: the same rows, written
-- by COPY from the driver's text (copy_rows), one row per line, in the caller's order. No
-- executor per row (no SELECT over arrays, no projection): measured at 20,000 jobs, 1.4x the
-- rows/s of the 20 INSERTs it replaces, in one transaction alike. run_at and created_at take
-- their defaults (the COPY's statement_timestamp()); paused comes from job_copy_paused; the
-- wake is sent after commit (WakeThrottle, as for any batch in a transaction). A taken id
-- fails the COPY, as it fails job_enqueue_minted.
copy x_jobs (id, input, tenant_id, name, queue, priority, enqueued_by, max_attempts,
             lease_seconds, traceparent, paused) from stdin

-- name: job_enqueue_many_resolve
-- Answers every skipped row of a batch in one statement: by id first, else the live row of its key.
select k.id as requested, j.id as found, (j.id = k.id) as same_id
from unnest(%(ids)s::uuid[], %(names)s::text[], %(keys)s::text[]) as k(id, name, idempotency_key)
join x_jobs j
  on j.id = k.id
  or (k.idempotency_key is not null
      and j.name = k.name
      and j.idempotency_key = k.idempotency_key
      and j.state in ('queued', 'running'))

-- name: job_claim
-- Seeks x_jobs_claim per queue and per priority level, in claim order, and stops after limit
-- rows, so no Sort over queued rows and a cost independent of the backlog:
-- - levels walks the distinct priorities of a queue's claimable rows, highest first, one index
--   descent each (a loose index scan), computed only as deep as the claim reads;
-- - within a level the seek is a range ending at now(), so future rows are never read, however
--   many sit at a higher priority;
-- - a paused job name's rows are out of the index (paused = true); the pause check stays in the
--   seek for a row that was enqueued as the pause landed and missed its flag.
-- Paused queues are filtered before the seek. A queue's rows come out in level order (the
-- recursion yields one level per queue per step, highest first); the final sort merges at most
-- limit rows per queue. Correct only because the claim autocommits: the skipped locks of rows
-- the outer limit drops end with it.
-- The queues and the limit reach the planner as subqueries, never as values: a plan made for
-- given values then costs what the plan for any values costs, and the plan cache keeps the
-- generic plan after its five trials instead of planning every claim again (0.33 ms of the
-- server's CPU a claim, a seventh of a claim of 90 jobs). A limit the planner cannot see it
-- estimates at a tenth of the rows: limited so alone, the plan's cost grew with the backlog
-- (125,000 at 1,000,000 queued rows), past jit_above_cost (100,000), and every claim then
-- compiled its expressions with JIT, about 50 ms instead of 2.5, custom and generic plans
-- alike; the drain of 1,000,000 jobs fell to a third. Each queue's rows are therefore also
-- limited by a constant, CLAIM_CHUNK (params.py; the driver runs one statement per chunk), which
-- bounds the rows the final sort is estimated at: the cost is 1,600 at 10,000 rows, 2,700 at
-- 100,000, 2,800 at 1,000,000. The seek keeps the subquery limit (a constant there made a level
-- of 1,400 rows look cheaper to scan whole and sort). A generic plan keeps the shape chosen for
-- the table as it was; bound.py replans it every REPLAN_SECONDS.
with recursive queues as (
    select q.name
    from unnest((select %(queues)s::text[])) as q(name)
    where not exists (
        select 1 from x_job_pauses p where p.scope = 'queue' and p.target = q.name
    )
), levels as (
    select q.name as queue, top.priority
    from queues q
    {{priority_level_walk}}
), candidates as (
    select c.id
    from queues q
    cross join lateral (
        select t.id, t.priority, t.run_at
        from (
            select s.id, s.priority, s.run_at
            from levels l
            cross join lateral (
                select j.id, j.priority, j.run_at
                from x_jobs j
                where j.queue = l.queue
                  and j.priority = l.priority
                  and j.state = 'queued'
                  and not j.paused
                  and j.run_at <= now()
                  and not exists (
                      select 1 from x_job_pauses p where p.scope = 'job' and p.target = j.name
                  )
                order by j.run_at
                limit (select %(limit)s::int)
                for update of j skip locked
            ) as s
            where l.queue = q.name
            limit (select %(limit)s::int)
        ) as t
        limit 1000 -- CLAIM_CHUNK (params.py): bounds the estimates, never the claim
    ) as c
    order by c.priority desc, c.run_at
    limit (select %(limit)s::int)
)
{{claim_take}}

-- fragment: claim_take
-- The rows of the CTE candidates(id) taken for one attempt each: job_claim and
-- job_claim_notified. The claim commits without waiting for the WAL flush (synchronous_commit
-- off for its own transaction): the flush was most of an idle worker's wake. A database crash
-- before the flush forgets the claim; the row is then queued as before it and is claimed again
-- (at-least-once), and the attempt's settle, fenced by its claim token, does not land. Any later
-- synchronous commit flushes it. run_at comes as epoch seconds, only to sort the rows in claim
-- order (a float8 loads in C; a timestamptz through Django's time zone loader, a Python call).
-- No other timestamp is returned: the worker reads neither the lease's end nor created_at.
-- The rows are named by an array of ids, not joined with candidates: a generic plan estimates
-- such an array at a few ids and reads each by primary key, where a join estimated at a tenth
-- of the backlog read the whole table (a hash join over a sequential scan).
update x_jobs j
set state = 'running',
    attempt = j.attempt + 1,
    claim_token = gen_random_uuid(),
    worker_id = %(worker_id)s,
    started_at = now(),
    body_pending = false,
    lease_expires_at = now() + make_interval(secs => coalesce(j.lease_seconds, %(lease_seconds)s))
from (select set_config('synchronous_commit', 'off', true) as setting) as deferred_flush
where j.id = any(array(select c.id from candidates c))
returning j.id, j.name, j.queue, j.input::text, j.attempt, j.max_attempts, j.claim_token,
          j.priority, j.tenant_id, j.traceparent,
          extract(epoch from j.run_at)::float8 as run_at

-- fragment: held_state(row)
-- The state test of every write fenced to a running attempt whose row is named by id (settles,
-- heartbeats, nacks, progress, steps, leases): $row is running. Written as an expression that no
-- partial index's predicate matches, so the row is read through x_jobs_pkey. Plain
-- "state = 'running'" matches x_jobs_lease, which its statistics (taken while few jobs ran) make
-- look like one row: the planner then walks every running row and joins each with every given
-- id, re-reading the given arrays per running row. On 200 running rows an ack of 100 took 55 ms
-- that way and 2 ms by primary key (EXPLAIN ANALYZE).
$row.state || '' = 'running'

-- fragment: batch_array(param, type)
-- The array parameter $param (of $type elements) of a worker's batch statement (its settles and
-- its heartbeat), read through a scalar subquery so that no plan sees its length: a custom plan
-- then costs what the generic plan costs plus its planning, and the plan cache keeps the
-- generic plan from the sixth run on. Given as a literal, a batch of one or a few rows looked
-- cheaper to plan afresh each time than the generic plan (sized for 10 rows), so a worker's
-- flush of one ending was planned on every run: about half of the backend CPU of an ack of one
-- job (pg_prepared_statements: 0 generic, 40 custom plans of 40 runs). The generic plan's shape
-- is the custom one's: each given id joined to x_jobs_pkey (held_state).
(select %($param)s::$type[])

-- fragment: lent_row_held(ending)
-- An ending of a run on a lent slot lands only while the row it rode is there: $ending.lent_by,
-- the job that row names, when no settle has yet shown it held (null: nothing to check). An
-- operator's release of the key or cancel of that job deletes the row; a run whose slot's row
-- went did not hold its slot, and its ending is left to the rescuer.
($ending.lent_by is null or exists (
    select 1 from x_job_leases l where l.job_id = $ending.lent_by and l.kind = 'concurrency'
))

-- name: job_claim_notified
-- The job an enqueue's wake named (its NOTIFY carries the id), claimed by primary key for an idle
-- worker that heard it, fenced as job_claim fences: still queued and due, on one of the worker's
-- queues, neither its queue nor its name paused, and skipped while another claim holds its lock.
-- Answers nothing when any of that fails; the worker's own claim follows the wake then. Planned
-- in a fraction of job_claim's time, which is most of the claim on an unprepared connection.
with candidates as (
    select j.id
    from x_jobs j
    where j.id = %(id)s
      and j.queue = any(%(queues)s::text[])
      and j.state = 'queued'
      and not j.paused
      and j.run_at <= now()
      and not exists (
          select 1 from x_job_pauses p
          where (p.scope = 'queue' and p.target = j.queue) or (p.scope = 'job' and p.target = j.name)
      )
    for update of j skip locked
)
{{claim_take}}

-- fragment: acked_done
-- A batch of completed attempts settled, each fenced by state and claim token: the CTE done(id,
-- name) of job_ack_many and job_settle_handoff. A relayed run (it ran on a slot lent by a run
-- whose row this statement or an earlier one of the same worker settles, and no row ever named
-- it) is stamped started at the statement's moment: by the store's stamps its run is an instant
-- at or after its slot's owner finished.
done as (
    update x_jobs j
    set state = 'completed',
        result = a.result::jsonb,
        progress = coalesce(a.progress::jsonb, j.progress),
        started_at = case when a.relayed then now() else j.started_at end,
        finished_at = now(),
        lease_expires_at = null
    from unnest({{batch_array(param=ids, type=uuid)}}, {{batch_array(param=tokens, type=uuid)}},
                {{batch_array(param=results, type=text)}},
                {{batch_array(param=progress, type=text)}},
                {{batch_array(param=relayed, type=bool)}},
                {{batch_array(param=lent_by, type=uuid)}})
        as a(id, token, result, progress, relayed, lent_by)
    where j.id = a.id and {{held_state(row=j)}} and j.claim_token = a.token
      and {{lent_row_held(ending=a)}}
    returning j.id, j.name
)

-- fragment: acked_counted
-- The completed counter of every name in done, moved in the same statement (names in order,
-- so two batches lock counter rows in the same order and never deadlock).
counter_deltas({{counter_columns}}) as (
    select d.name, 'minute', date_trunc('minute', now()), count(*), 0, 0, 0, 0, 0
    from done d
    group by d.name
), counted as (
    {{counter_upsert}}
)

-- name: job_ack_many
-- Settles a batch of completed attempts in one statement and moves the per-minute counter in
-- the same statement.
with {{acked_done}}, freed as (
    -- limits: the run's concurrency slots go with its settle (x_job_leases)
    delete from x_job_leases l using done d where l.job_id = d.id and l.kind = 'concurrency'
), {{acked_counted}}
select id from done

-- fragment: slots_handed(settled)
-- The hand-off of job_settle_handoff and job_settle_many_handoff, after the settle's row change
-- (the CTE $settled of the settled ids): each settled run's concurrency slot passes to a next
-- run of the same key that the worker offers (one concurrency slot each, in the order given):
-- the slot's row is updated to the next run, never deleted and inserted again, so the key never
-- holds more rows than before. A next run is fenced by state and claim token and must hold no
-- live slot of its key already; its slot must be below its limit. The grant's moment is one
-- clock_timestamp(), at or after the settled runs' finished_at (now()): the row's acquired_at
-- and the next run's started_at, so the runs' stamps never overlap; a next run marked relayed
-- (it already runs on the slot, lent) is not stamped here: its own settle stamps it started at
-- that settle's moment, so the hand-off writes no x_jobs row for it. A row is fenced by the job
-- it belonged to, so a slot taken over meanwhile (expired) is left alone. The rows no next run
-- takes are deleted, as every settle does.
offered as (
    select o.n, o.job_id, o.token, o.key, o.lim, o.relayed
    from unnest({{batch_array(param=next_ids, type=uuid)}},
                {{batch_array(param=next_tokens, type=uuid)}},
                {{batch_array(param=next_keys, type=text)}},
                {{batch_array(param=next_limits, type=int)}},
                {{batch_array(param=next_relayed, type=bool)}})
        with ordinality as o(job_id, token, key, lim, relayed, n)
), next_runs as (
    select o.n, o.job_id, o.token, o.key, o.lim, o.relayed, j.lease_expires_at,
           row_number() over (partition by o.key order by o.n) as rank
    from offered o
    join x_jobs j on j.id = o.job_id and {{held_state(row=j)}} and j.claim_token = o.token
    where not exists (
        select 1 from x_job_leases l
        where l.key = o.key and l.job_id = o.job_id and l.expires_at > now()
    )
), freeing as (
    select l.key, l.slot, l.job_id,
           row_number() over (partition by l.key order by l.slot) as rank
    from x_job_leases l
    join $settled d on d.id = l.job_id
    where l.kind = 'concurrency'
), paired as (
    -- each freed row beside the next run of its key with the same rank (none: nulls), matched
    -- by grouping the two lists, once: a join of the two CTEs, which the planner takes for a
    -- row each, compared every row of one with every row of the other, twice
    select u.key,
           (array_agg(u.slot) filter (where u.freeing))[1] as slot,
           (array_agg(u.job_id) filter (where u.freeing))[1] as owner,
           (array_agg(u.job_id) filter (where not u.freeing))[1] as job_id,
           (array_agg(u.token) filter (where not u.freeing))[1] as token,
           (array_agg(u.lease_expires_at) filter (where not u.freeing))[1] as lease_expires_at,
           (array_agg(u.lim) filter (where not u.freeing))[1] as lim,
           (array_agg(u.relayed) filter (where not u.freeing))[1] as relayed
    from (
        select f.key::text as key, f.rank, true as freeing, f.slot, f.job_id, null::uuid as token,
               null::timestamptz as lease_expires_at, null::int as lim, null::bool as relayed
        from freeing f
        union all
        select r.key, r.rank, false, null, r.job_id, r.token, r.lease_expires_at, r.lim,
               r.relayed
        from next_runs r
    ) as u
    group by u.key, u.rank
), stamp as (
    select clock_timestamp() as at
), handed as (
    update x_job_leases l
    set job_id = p.job_id, claim_token = p.token, acquired_at = t.at,
        expires_at = p.lease_expires_at
    from paired p
    cross join stamp t
    where p.slot < p.lim
      and l.key = p.key and l.slot = p.slot and l.job_id = p.owner and l.kind = 'concurrency'
    returning l.job_id, p.relayed
), stamped as (
    select h.job_id from handed h where not h.relayed
), freed as (
    delete from x_job_leases l
    using paired p
    where p.owner is not null and not coalesce(p.slot < p.lim, false)
      and l.key = p.key and l.slot = p.slot and l.job_id = p.owner and l.kind = 'concurrency'
), {{grants_started(grants=stamped)}}

-- fragment: handoff_answer(settled)
-- The answer of job_settle_handoff and job_settle_many_handoff: each settled id ('settled'),
-- each next run granted a slot ('granted'), and each settled run whose concurrency row the
-- statement found ('held': the runs its slot was lent to held it).
select id, 'settled' as kind from $settled
union all
select job_id, 'granted' from handed
union all
select distinct job_id, 'held' from freeing

-- name: job_settle_handoff
-- job_ack_many, and in the same statement the settled runs' concurrency slots handed on
-- (slots_handed). Answers as handoff_answer.
with {{acked_done}}, {{slots_handed(settled=done)}}, {{acked_counted}}
{{handoff_answer(settled=done)}}

-- name: job_settle_many_handoff
-- job_settle_many (completes, retries, fails and drops), and in the same statement the settled
-- runs' concurrency slots handed on (slots_handed): a batch with a nack hands its slots on as a
-- batch of acks does. Answers as handoff_answer.
with {{settle_given_kept}}, {{slots_handed(settled=settled)}}, {{settle_deltas}}, counted as (
    {{counter_upsert}}
)
{{handoff_answer(settled=settled)}}

-- fragment: settled_slots_freed
-- What every settle does after its row change (a CTE ``settled(id, name, ...)``): the run's
-- concurrency slots go with it (limits, x_job_leases).
freed as (
    delete from x_job_leases l using settled s where l.job_id = s.id and l.kind = 'concurrency'
)

-- fragment: settled_counted
-- The end of every settle: its counter_deltas added (the one counter upsert), the settled ids
-- answered.
counted as (
    {{counter_upsert}}
)
select id from settled

-- fragment: nack_fence
-- A nack lands only on the attempt that holds the job: running, with this claim token.
where j.id = %(id)s and {{held_state(row=j)}} and j.claim_token = %(claim_token)s
    returning j.id, j.name

-- fragment: nack_attempt_errors_progress
-- What a retry and a fail both write: the attempt given back when it does not count, the error
-- entry appended with its time, the pending progress kept.
attempt = case when %(counts_as_attempt)s then j.attempt else greatest(j.attempt - 1, 0) end,
        errors = case when %(error)s::jsonb is null then j.errors
                      else j.errors || jsonb_build_array(%(error)s::jsonb || jsonb_build_object('at', now())) end,
        progress = coalesce(%(progress)s::jsonb, j.progress)

-- fragment: settle_given_kept
-- The row change of job_settle_many and job_settle_many_handoff: the CTE settled(id, name,
-- action, counts) of every ending that landed.
given as (
    select g.id, g.token, g.action, g.result, g.progress, g.error, g.delay_seconds, g.counts,
           g.relayed
    from unnest({{batch_array(param=ids, type=uuid)}}, {{batch_array(param=tokens, type=uuid)}},
                {{batch_array(param=actions, type=text)}},
                {{batch_array(param=results, type=text)}},
                {{batch_array(param=progress, type=text)}},
                {{batch_array(param=errors, type=text)}},
                {{batch_array(param=delays, type=float8)}},
                {{batch_array(param=counts, type=bool)}},
                {{batch_array(param=relayed, type=bool)}},
                {{batch_array(param=lent_by, type=uuid)}})
        as g(id, token, action, result, progress, error, delay_seconds, counts, relayed, lent_by)
    where {{lent_row_held(ending=g)}}
), kept as (
    -- a relayed run is stamped started at the statement's moment, as job_ack_many stamps it
    update x_jobs j
    set state = case g.action when 'complete' then 'completed'
                              when 'retry' then 'queued'
                              else 'failed' end,
        result = case when g.action = 'complete' then g.result::jsonb else j.result end,
        run_at = case when g.action = 'retry'
                      then now() + make_interval(secs => greatest(g.delay_seconds, 0))
                      else j.run_at end,
        attempt = case when g.counts then j.attempt else greatest(j.attempt - 1, 0) end,
        errors = case when g.error is null then j.errors
                      else j.errors || jsonb_build_array(g.error::jsonb || jsonb_build_object('at', now())) end,
        progress = coalesce(g.progress::jsonb, j.progress),
        started_at = case when g.relayed then now() else j.started_at end,
        finished_at = case when g.action = 'retry' then j.finished_at else now() end,
        lease_expires_at = null,
        claim_token = case when g.action = 'retry' then null else j.claim_token end,
        worker_id = case when g.action = 'retry' then null else j.worker_id end
    from given g
    where j.id = g.id and g.action in ('complete', 'retry', 'fail')
      and {{held_state(row=j)}} and j.claim_token = g.token
    returning j.id, j.name, g.action, g.counts
), dropped as (
    delete from x_jobs j
    using given g
    where j.id = g.id and g.action = 'drop' and {{held_state(row=j)}} and j.claim_token = g.token
    returning j.id, j.name, g.action, g.counts
), settled as (
    select id, name, action, counts from kept
    union all
    select id, name, action, counts from dropped
)

-- fragment: settle_deltas
-- The counter deltas of job_settle_many and job_settle_many_handoff, from the CTE settled.
counter_deltas({{counter_columns}}) as (
    select s.name, 'minute', date_trunc('minute', now()),
           count(*) filter (where s.action = 'complete'),
           count(*) filter (where s.action = 'retry'),
           count(*) filter (where s.action = 'fail' and s.counts),
           count(*) filter (where s.action = 'drop'),
           count(*) filter (where s.action = 'fail' and not s.counts),
           0
    from settled s
    where s.action <> 'retry' or s.counts
    group by s.name
)

-- name: job_settle_many
-- Every ending of a settler's flush in one statement: completes, retries, fails and drops, each
-- fenced by state and claim token, each column set as job_ack_many and job_nack_* set it. One
-- counter row per job name per statement, whatever the mix: a storm of failures moves each
-- name's row once per flush, never once per failure (names in order, as every counter write).
with {{settle_given_kept}}, {{settled_slots_freed}}, {{settle_deltas}}, {{settled_counted}}

-- name: job_nack_retry
-- Back to queued at now() + delay, fenced. An attempt that does not count (a release at
-- shutdown) gives its attempt back and moves no counter.
with settled as (
    update x_jobs j
    set state = 'queued',
        run_at = now() + make_interval(secs => %(delay_seconds)s::float8),
        {{nack_attempt_errors_progress}},
        lease_expires_at = null,
        claim_token = null,
        worker_id = null
    {{nack_fence}}
), {{settled_slots_freed}}, counter_deltas({{counter_columns}}) as (
    select s.name, 'minute', date_trunc('minute', now()), 0, 1, 0, 0, 0, 0
    from settled s
    where %(counts_as_attempt)s
), {{settled_counted}}

-- name: job_nack_fail
-- Failed for good and kept for an operator (the dead letter), fenced. A refusal (an attempt that
-- does not count) is counted as refused, not dead.
with settled as (
    update x_jobs j
    set state = 'failed',
        {{nack_attempt_errors_progress}},
        finished_at = now(),
        lease_expires_at = null
    {{nack_fence}}
), {{settled_slots_freed}}, counter_deltas({{counter_columns}}) as (
    select s.name, 'minute', date_trunc('minute', now()), 0, 0,
           case when %(counts_as_attempt)s then 1 else 0 end, 0,
           case when %(counts_as_attempt)s then 0 else 1 end, 0
    from settled s
), {{settled_counted}}

-- name: job_nack_drop
-- Failed for good with no dead letter: the row is deleted, fenced, and counted as dropped.
with settled as (
    delete from x_jobs j
    {{nack_fence}}
), {{settled_slots_freed}}, counter_deltas({{counter_columns}}) as (
    select s.name, 'minute', date_trunc('minute', now()), 0, 0, 0, 1, 0, 0
    from settled s
), {{settled_counted}}

-- name: job_heartbeat_many
-- One statement per interval for every running attempt of a process, storing their pending
-- progress in the same fenced write. It never waits on a row lock: a row that another
-- transaction holds (a body's own transaction, an operator's write) is skipped for this beat,
-- since one waiting heartbeat would stall every lease of the worker. The last read takes no
-- lock and sees the committed row, which tells a locked row still ours (renewed = false) from a
-- lost one (not answered: rescued, cancelled or settled elsewhere).
with given as (
    select a.id, a.token, a.progress
    from unnest({{batch_array(param=ids, type=uuid)}}, {{batch_array(param=tokens, type=uuid)}},
                {{batch_array(param=progress, type=text)}})
        as a(id, token, progress)
), locked as (
    select j.id
    from x_jobs j
    join given g on g.id = j.id and g.token = j.claim_token
    where {{held_state(row=j)}}
    for update of j skip locked
), renewed as (
    update x_jobs j
    set lease_expires_at = now() + make_interval(secs => coalesce(j.lease_seconds, %(lease_seconds)s)),
        progress = coalesce(g.progress::jsonb, j.progress)
    from locked l
    join given g on g.id = l.id
    where j.id = l.id and {{held_state(row=j)}} and j.claim_token = g.token
    returning j.id, j.claim_token, j.lease_expires_at
), leases_renewed as (
    -- limits: a renewed attempt's concurrency slots follow its lease (x_job_leases)
    update x_job_leases s
    set expires_at = r.lease_expires_at
    from renewed r
    where s.job_id = r.id and s.claim_token = r.claim_token and s.kind = 'concurrency'
)
select j.id, exists (select 1 from renewed r where r.id = j.id) as renewed
from x_jobs j
join given g on g.id = j.id and g.token = j.claim_token
where {{held_state(row=j)}}

-- name: job_mark_pending_many
-- Rare: only a worker whose claimed bodies wait for a thread writes it (and clears it when one
-- starts). Fenced like a heartbeat; the rescuer gives a pending attempt back uncounted.
-- A mark (pending true, several rows, from the maintenance thread) never waits for a row another
-- statement holds: it would hold some rows while waiting for others, in no fixed order, and a
-- lease grant stamping the same attempts' started_at (lease_acquire_many) deadlocked with it. A
-- row it skips is one being written by its own worker right then (most often its run starting),
-- and stays as unmarked as it was before the maintenance pass came. A clear (pending false, one
-- row, from the body's thread before it starts) waits: it must land before the body runs.
with asked as (
    select a.id, a.token
    from unnest(%(ids)s::uuid[], %(tokens)s::uuid[]) as a(id, token)
), free as (
    select j.id
    from x_jobs j
    join asked a on j.id = a.id
    where %(pending)s
    order by j.id
    for update of j skip locked
), held as (
    select a.id, a.token from asked a where not %(pending)s
    union all
    select a.id, a.token from asked a join free f on f.id = a.id
)
update x_jobs j
set body_pending = %(pending)s
from held h
where j.id = h.id and {{held_state(row=j)}} and j.claim_token = h.token
returning j.id

-- name: job_progress
-- Fenced like a settle: a stale attempt's progress does not land.
update x_jobs
set progress = %(progress)s::jsonb
where id = %(id)s and {{held_state(row=x_jobs)}} and claim_token = %(claim_token)s
returning id

-- name: job_cancel
-- Any live job. A running attempt's fenced writes stop landing at once (state is no longer
-- running), which is how its worker learns of the cancel. A given entry (the reason, who) is
-- kept in errors beside the attempt it ended.
with cancelled as (
    update x_jobs
    set state = 'cancelled', finished_at = now(), lease_expires_at = null,
        errors = case when %(entry)s::jsonb is null then errors
                      else errors || jsonb_build_array(%(entry)s::jsonb || jsonb_build_object(
                          'attempt', attempt, 'worker_id', worker_id, 'at', now())) end
    where id = %(id)s and state in ('queued', 'running')
    returning id, name
), freed as (
    -- limits: a cancelled run's concurrency slots go at once (x_job_leases)
    delete from x_job_leases l using cancelled c where l.job_id = c.id and l.kind = 'concurrency'
), counter_deltas({{counter_columns}}) as (
    select c.name, 'minute', date_trunc('minute', now()), 0, 0, 0, 0, 0, 1
    from cancelled c
), counted as (
    {{counter_upsert}}
)
select id from cancelled

-- name: job_requeue
-- A finished job back to queued, due now, with fresh attempts; refused (no row) while another
-- live job holds its idempotency key. job_requeue_classify explains a miss.
update x_jobs j
set state = 'queued', run_at = now(), attempt = 0, claim_token = null, worker_id = null,
    lease_expires_at = null, started_at = null, finished_at = null, result = null, progress = null
where j.id = %(id)s
  and j.state in ('completed', 'failed', 'cancelled')
  and not exists (
      select 1 from x_jobs d
      where j.idempotency_key is not null
        and d.name = j.name
        and d.idempotency_key = j.idempotency_key
        and d.state in ('queued', 'running')
        and d.id <> j.id
  )
returning j.id

-- name: job_requeue_classify
-- Why a requeue missed: the job's state, and the live job that holds its key, if any.
select j.state,
       (select d.id from x_jobs d
        where j.idempotency_key is not null
          and d.name = j.name
          and d.idempotency_key = j.idempotency_key
          and d.state in ('queued', 'running')
          and d.id <> j.id
        limit 1) as holder
from x_jobs j
where j.id = %(id)s

-- name: job_rescue_expired_scan
-- Running attempts whose lease ended, oldest lease first, over x_jobs_lease; the worker's policy
-- decides what follows each (job_rescue_expired applies it). No lock: the write re-checks.
select id, claim_token, name, attempt, max_attempts, body_pending
from x_jobs
where state = 'running' and lease_expires_at < now()
order by lease_expires_at
limit %(limit)s

-- name: job_rescue_expired
-- Applies the decisions the worker took for expired attempts: retry (due after its delay),
-- fail (the dead letter) or drop (deleted). Each row is re-checked under its lock (still
-- running, same claim token, lease still ended), so an attempt settled, heartbeated or
-- re-claimed since the scan is left alone; skip locked leaves a row another rescuer or a settle
-- holds to them. An attempt that does not count (its body never started) gives its attempt
-- back, appends no error and moves no counter.
with decided as (
    select d.id, d.token, d.action, d.delay_seconds, d.counts
    from unnest(%(ids)s::uuid[], %(tokens)s::uuid[], %(actions)s::text[],
                %(delays)s::float8[], %(counts)s::bool[]) as d(id, token, action, delay_seconds, counts)
), locked as (
    select j.id, d.action, d.delay_seconds, d.counts
    from x_jobs j
    join decided d on d.id = j.id
    where j.state = 'running' and j.claim_token = d.token and j.lease_expires_at < now()
    order by j.id
    for update of j skip locked
), kept as (
    update x_jobs j
    set state = case when l.action = 'fail' then 'failed' else 'queued' end,
        run_at = case when l.action = 'retry'
                      then now() + make_interval(secs => l.delay_seconds) else j.run_at end,
        attempt = case when l.counts then j.attempt else greatest(j.attempt - 1, 0) end,
        finished_at = case when l.action = 'fail' then now() end,
        lease_expires_at = null,
        claim_token = null,
        body_pending = false,
        errors = case when not l.counts then j.errors
                      else j.errors || jsonb_build_array(jsonb_build_object(
                          'attempt', j.attempt,
                          'error_class', 'ultimat3_jobs.LeaseExpired',
                          'message', 'the lease expired before the attempt settled; its worker was lost',
                          'traceback', '',
                          'worker_id', j.worker_id,
                          'at', now())) end
    from locked l
    where j.id = l.id and l.action in ('retry', 'fail')
    returning j.id, j.name, l.action, j.attempt, l.counts, j.tenant_id
), dropped as (
    delete from x_jobs j
    using locked l
    where j.id = l.id and l.action = 'drop'
    returning j.id, j.name, l.action, j.attempt, l.counts, j.tenant_id
), rescued as (
    select id, name, action, attempt, counts, tenant_id from kept
    union all
    select id, name, action, attempt, counts, tenant_id from dropped
), freed as (
    -- limits: a rescued attempt's concurrency slots go with it (x_job_leases)
    delete from x_job_leases l using rescued r where l.job_id = r.id and l.kind = 'concurrency'
), counter_deltas({{counter_columns}}) as (
    select r.name, 'minute', date_trunc('minute', now()), 0,
           count(*) filter (where r.action = 'retry'),
           count(*) filter (where r.action = 'fail'),
           count(*) filter (where r.action = 'drop'), 0, 0
    from rescued r
    where r.counts
    group by r.name
), counted as (
    {{counter_upsert}}
)
select id, name, action, attempt, tenant_id from rescued

-- name: job_get
-- One job for an operator or a result reader; the lease internals stay out.
select id, name, queue, state, priority, run_at, input::text, idempotency_key, tenant_id,
       enqueued_by, attempt, max_attempts, worker_id, lease_expires_at, progress::text,
       result::text, errors::text, created_at, started_at, finished_at
from x_jobs
where id = %(id)s

-- name: queue_demand
-- Ready jobs per queue, counted up to limit through the claim index, level by level as the
-- claim seeks (a bounded read, whatever the depth of future or paused rows); a paused queue
-- has no demand, nor do the rows of a paused job name.
with recursive {{queue_levels}}
select q.name as queue, {{queue_ready}} as ready
from unnest(%(queues)s::text[]) as q(name)

-- name: wake_notify
-- The wake of an enqueue made inside a transaction, sent in autocommit right after that
-- transaction committed (never after a rollback): the enqueue statement itself carried no NOTIFY,
-- since the throttle cannot count a NOTIFY whose commit is still to come. One NOTIFY per payload.
select pg_notify(%(channel)s, p) from unnest(%(payloads)s::text[]) as p
