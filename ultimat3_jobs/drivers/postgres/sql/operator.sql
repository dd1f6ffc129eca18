-- name: job_list
-- One page for an operator, newest first. The cursor is only a job id: the seek reads that
-- row's own (created_at, id), so a cursor can neither carry a filter nor a time of its own. The
-- first column says whether the cursor's row was found; the outer left join answers it (with
-- null job columns) even when the page is empty, so the driver can tell "no more rows" from
-- "the cursor's job is gone". x_jobs_newest gives the order: the page walks it and stops.
with anchor as (
    select c.created_at, c.id
    from x_jobs c
    where c.id = %(after)s::uuid
), page as (
    select j.id, j.name, j.queue, j.state, j.priority, j.run_at, j.idempotency_key,
           j.tenant_id, j.attempt, j.max_attempts, j.worker_id,
           jsonb_array_length(j.errors) as error_count,
           j.errors -> -1 ->> 'error_class' as last_error_class,
           j.errors -> -1 ->> 'message' as last_error_message,
           j.created_at, j.started_at, j.finished_at
    from x_jobs j
    where (%(states)s::text[] is null or j.state = any(%(states)s::text[]))
      and (%(queues)s::text[] is null or j.queue = any(%(queues)s::text[]))
      and (%(names)s::text[] is null or j.name = any(%(names)s::text[]))
      and (%(tenant)s::text is null or j.tenant_id = %(tenant)s::text)
      and (%(search)s::text is null
           or j.idempotency_key = %(search)s::text
           or j.id = %(search_id)s::uuid)
      and (%(after)s::uuid is null
           or (j.created_at, j.id) < (select a.created_at, a.id from anchor a))
    order by j.created_at desc, j.id desc
    limit %(limit)s
)
select (%(after)s::uuid is null or exists (select 1 from anchor)) as anchored,
       p.id, p.name, p.queue, p.state, p.priority, p.run_at, p.idempotency_key, p.tenant_id,
       p.attempt, p.max_attempts, p.worker_id, p.error_count, p.last_error_class,
       p.last_error_message, p.created_at, p.started_at, p.finished_at
from (select 1) as one
left join page p on true
order by p.created_at desc, p.id desc

-- name: job_promote
-- A queued job due later becomes due now; one already due keeps its run_at, and so its place
-- in claim order. Wakes the queue's workers at commit, as an enqueue due now does.
with promoted as (
    update x_jobs
    set run_at = now()
    where id = %(id)s and state = 'queued' and run_at > now()
    returning id, queue
)
select p.id, (select pg_notify('ultimat3_jobs', p.queue))
from promoted p

-- name: job_remove
-- Deletes any job but a running one, whose worker still owns it (cancel it first). A row a
-- claim is taking waits for it, then is re-checked: once running, it is left alone.
delete from x_jobs
where id = %(id)s and state <> 'running'
returning id

-- name: job_requeue_failed
-- Retry the failed jobs of one name in one statement, oldest first, as job_requeue does (due
-- now, fresh attempts, errors kept). Refuses none: a row whose key a live job holds is skipped
-- (x_jobs_live_key answers that), and of failed rows sharing a key only the newest is taken, so
-- the live-key index never sees two. Both rules filter before the limit, so a batch is never
-- spent on skipped rows. The failed rows are found through x_jobs_name_finished; the count of those
-- left is read in the same snapshot, before the update (a statement does not see its own
-- writes), hence minus the moved. Rows another transaction holds are skipped, not waited for.
-- One wake per queue that got jobs back.
with failed as (
    select j.id, j.idempotency_key, j.created_at,
           row_number() over (
               partition by j.idempotency_key order by j.created_at desc, j.id desc
           ) as newest
    from x_jobs j
    where j.name = %(name)s and j.state = 'failed'
), candidates as (
    select f.id
    from failed f
    where f.idempotency_key is null
       or (f.newest = 1
           and not exists (
               select 1 from x_jobs d
               where d.name = %(name)s
                 and d.idempotency_key = f.idempotency_key
                 and d.state in ('queued', 'running')))
    order by f.created_at, f.id
    limit greatest(%(limit)s, 0)
), locked as (
    select j.id
    from x_jobs j
    where j.id in (select c.id from candidates c)
    for update of j skip locked
), moved as (
    update x_jobs j
    set state = 'queued', run_at = now(), attempt = 0, claim_token = null, worker_id = null,
        lease_expires_at = null, started_at = null, finished_at = null, result = null,
        progress = null
    from locked l
    where j.id = l.id and j.state = 'failed'
    returning j.id, j.queue
), woken as (
    select pg_notify('ultimat3_jobs', w.queue)
    from (select distinct m.queue from moved m) as w
)
select (select count(*) from moved) as moved,
       (select count(*) from failed) - (select count(*) from moved) as remaining,
       (select count(*) from woken) as woken

-- fragment: names_loose_scan(table, alias, kept)
-- The job names of the rows of $table that $kept keeps, one index seek each (a loose scan of an
-- index that leads with the name and holds those rows): the recursive CTE names, whose last row
-- is a null name that its readers skip.
names (name) as (
    (select $alias.name from $table $alias where {{$kept(row=$alias)}} order by $alias.name limit 1)
    union all
    select (select $alias.name from $table $alias
            where $alias.name > n.name and {{$kept(row=$alias)}}
            order by $alias.name limit 1)
    from names n
    where n.name is not null
)

-- fragment: finished_row(row)
-- $row (of x_jobs) is finished: the predicate of x_jobs_name_finished, written so that the
-- planner proves it and reads that index.
$row.state in ('cancelled', 'completed', 'failed')

-- fragment: any_row(row)
-- Every row of $row's table counts (names_loose_scan over an index of every row).
$row.name is not null

-- name: queue_stats
-- Jobs per queue and state in one statement, cheap at any size of history. Live states read
-- only the partial indexes, one branch per state so that each index's predicate matches:
-- x_jobs_claim (queued: an index-only count, the due count and the oldest due run_at; a paused
-- queue's due count, its demand, is 0), with x_jobs_paused for the rows of paused job names,
-- which the claim index leaves out, and x_jobs_lease
-- (running); they hold the backlog and the work in flight, not the history. Finished states
-- would be a scan of the whole history, so they go through x_jobs_name_finished: a loose scan finds
-- the job names (one seek each), then per name and finished state an index scan from
-- (name, state) on, in index order, stops after limit rows; the rows of that state come first,
-- so their count is exact below the limit and a lower bound at it. (With "state = ..." and no
-- order to keep, the planner takes a bitmap scan, which reads every match before the limit.)
-- The driver sorts the rows.
with recursive {{names_loose_scan(table=x_jobs, alias=j, kept=finished_row)}}, queued as (
    select j.queue, count(*) as jobs, min(j.run_at) filter (where j.run_at <= now()) as oldest,
           count(*) filter (where j.run_at <= now()) as ready
    from (
        select c.queue, c.run_at from x_jobs c where c.state = 'queued' and not c.paused
        union all
        select p.queue, p.run_at from x_jobs p where p.paused and p.state = 'queued'
    ) as j
    group by j.queue
), running as (
    select j.queue, count(*) as jobs
    from x_jobs j
    where j.state = 'running'
    group by j.queue
), finished as (
    select c.queue, s.state, c.jobs,
           sum(c.jobs) over (partition by n.name, s.state) >= %(limit)s as capped
    from names n
    cross join unnest(array['completed', 'failed', 'cancelled']::text[]) as s(state)
    cross join lateral (
        select r.queue, count(*) as jobs
        from (
            select j.queue, j.state
            from x_jobs j
            where j.name = n.name and j.state >= s.state and {{finished_row(row=j)}}
            order by j.state
            limit %(limit)s
        ) as r
        where r.state = s.state
        group by r.queue
    ) as c
    where n.name is not null
)
select q.queue, 'queued' as state, q.jobs,
       extract(epoch from now() - q.oldest)::float8 as oldest_ready_seconds, true as exact,
       case when exists (select 1 from x_job_pauses p where p.scope = 'queue' and p.target = q.queue)
            then 0 else q.ready end as ready
from queued q
union all
select r.queue, 'running', r.jobs, null::float8, true, 0
from running r
union all
select f.queue, f.state, sum(f.jobs)::bigint, null::float8, not bool_or(f.capped), 0
from finished f
group by f.queue, f.state

-- name: counter_read
-- Counter rows of one period from a bucket on, for an operator's recent view. The unique index
-- leads with the job name, so a loose scan finds the names (one seek each) and each name reads
-- only its range of buckets: the cost follows the rows answered, not the counters' history.
with recursive {{names_loose_scan(table=x_job_counters, alias=c, kept=any_row)}}
select r.name, r.period, r.bucket, r.completed, r.retried, r.dead, r.dropped, r.refused,
       r.cancelled
from names n
cross join lateral (
    select c.name, c.period, c.bucket, c.completed, c.retried, c.dead, c.dropped, c.refused,
           c.cancelled
    from x_job_counters c
    where c.name = n.name
      and c.period = %(period)s
      and c.bucket >= date_trunc(%(period)s, %(since)s::timestamptz)
) as r
where n.name is not null
order by r.bucket, r.name collate "C"

-- name: counter_total
-- Everything that ever settled, per job name, for monotonic metrics: a sum over the whole
-- counters table (one row per name and minute that settled something), so its cost grows with
-- the counters' history.
select c.name, sum(c.completed)::bigint as completed, sum(c.retried)::bigint as retried,
       sum(c.dead)::bigint as dead, sum(c.dropped)::bigint as dropped,
       sum(c.refused)::bigint as refused, sum(c.cancelled)::bigint as cancelled
from x_job_counters c
group by c.name
order by c.name collate "C"
