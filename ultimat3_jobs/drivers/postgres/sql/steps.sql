-- fragment: step_fence
-- The one fence of every step write: the attempt still runs its job under its claim token.
select 1 from x_jobs j
where j.id = %(id)s and {{held_state(row=j)}} and j.claim_token = %(claim_token)s

-- name: step_get_many
-- A job's stored steps, in the order they were first written: read once per attempt, the
-- first time its body reaches a step, so a replayed step costs no statement.
select s.name, s.seq, s.kind, s.status, s.output, s.error, s.event, s.key, s.wait_since,
       s.wait_until, s.updated_at
from x_job_steps s
where s.job_id = %(id)s
order by s.seq, s.name

-- name: step_put
-- Record a step done (or compensated), fenced by the attempt's claim token: nothing lands for
-- an attempt that lost its job. A step moves only forward: done on a new step or over started
-- or waiting, compensated only over done (its output kept); anything else answers nothing.
with fence as (
    {{step_fence}}
), compensated as (
    update x_job_steps s
    set status = 'compensated', error = coalesce(%(error)s::jsonb, s.error), updated_at = now()
    where s.job_id = %(id)s and s.name = %(name)s and s.status = 'done'
      and %(status)s = 'compensated' and exists (select 1 from fence)
    returning s.name
), finished as (
    insert into x_job_steps as s (job_id, name, seq, kind, status, output, error, created_at,
                                  updated_at)
    select %(id)s, %(name)s, %(seq)s, %(kind)s, 'done', %(output)s::jsonb, %(error)s::jsonb,
           now(), now()
    where %(status)s = 'done' and exists (select 1 from fence)
    on conflict (job_id, name) do update
    set status = 'done', output = excluded.output, error = coalesce(excluded.error, s.error),
        updated_at = now()
    where s.status in ('started', 'waiting')
    returning s.name
)
select name from compensated
union all
select name from finished

-- name: step_put_done
-- step_put for a step done, its common case, as one fenced INSERT: planned in a fraction of
-- the time of step_put's statement, which also covers compensation. The same rule: done on a
-- new step or over started or waiting, and nothing lands for an attempt that lost its job.
{{step_insert_done}}

-- fragment: step_insert_done
-- A step recorded done, fenced: step_put_done's statement, and backfill_step_put's with the
-- ledger's advance.
insert into x_job_steps as s (job_id, name, seq, kind, status, output, error, created_at,
                              updated_at)
select %(id)s, %(name)s, %(seq)s, %(kind)s, 'done', %(output)s::jsonb, %(error)s::jsonb,
       now(), now()
where exists ({{step_fence}})
on conflict (job_id, name) do update
set status = 'done', output = excluded.output, error = coalesce(excluded.error, s.error),
    updated_at = now()
where s.status in ('started', 'waiting')
returning s.name

-- name: step_start_once
-- A once step is marked started before its function runs, fenced; a row already there (an
-- earlier attempt's) is left alone and answers nothing.
insert into x_job_steps (job_id, name, seq, kind, status, created_at, updated_at)
select %(id)s, %(name)s, %(seq)s, 'once', 'started', now(), now()
where exists ({{step_fence}})
on conflict (job_id, name) do nothing
returning name

-- name: step_wait
-- Begin a sleep or a wait for an event, fenced, stamped by the database's clock: wait_since is
-- now(), wait_until now() plus the timeout (or the given wake time). An event matches the wait
-- only when it is sent at or after wait_since.
insert into x_job_steps (job_id, name, seq, kind, status, event, key, wait_since, wait_until,
                         created_at, updated_at)
select %(id)s, %(name)s, %(seq)s, %(kind)s, 'waiting', %(event)s, %(key)s, now(),
       coalesce(%(until)s::timestamptz, now() + make_interval(secs => %(seconds)s::float8)),
       now(), now()
where exists ({{step_fence}})
on conflict (job_id, name) do nothing
returning name, seq, kind, status, output, error, event, key, wait_since, wait_until, updated_at

-- name: step_wait_resolve
-- End a waiting step if it may end, fenced: with the payload of the first matching event sent
-- at or after the wait began (event_send delivers it into the step; this finds one that raced
-- the wait), or with null once the database's clock passes wait_until. The step row is locked,
-- so a concurrent event_send is waited for and then seen. Answers the step as it stands.
with fence as (
    {{step_fence}}
), step as (
    select s.job_id, s.name, s.status, s.event, s.key, s.wait_since, s.wait_until
    from x_job_steps s
    where s.job_id = %(id)s and s.name = %(name)s and exists (select 1 from fence)
    for update
), found as (
    select e.payload
    from step, x_job_events e
    where step.status = 'waiting' and step.event is not null
      and e.name = step.event and e.key = step.key and e.created_at >= step.wait_since
    order by e.created_at, e.id
    limit 1
), ended as (
    update x_job_steps s
    set status = 'done',
        output = (select payload from found),
        updated_at = now()
    from step
    where s.job_id = step.job_id and s.name = step.name and step.status = 'waiting'
      and (exists (select 1 from found) or step.wait_until <= now())
    returning s.name, s.seq, s.kind, s.status, s.output, s.error, s.event, s.key, s.wait_since,
              s.wait_until, s.updated_at
)
select name, seq, kind, status, output, error, event, key, wait_since, wait_until, updated_at
from ended
union all
select s.name, s.seq, s.kind, s.status, s.output, s.error, s.event, s.key, s.wait_since,
       s.wait_until, s.updated_at
from x_job_steps s
where s.job_id = %(id)s and s.name = %(name)s and exists (select 1 from fence)
  and not exists (select 1 from ended)

-- name: job_suspend
-- A body that sleeps or waits gives its attempt back, fenced: queued again, due when its step
-- wakes, with no error, no counter, no lease. The step row is read locked, so an event_send that
-- ended the wait meanwhile is seen (the job is then due now), and one that comes after finds
-- the job queued and makes it due.
with step as (
    select s.status, s.event, s.key, s.wait_since, s.wait_until
    from x_job_steps s
    where s.job_id = %(id)s and s.name = %(step)s
    for update
), suspended as (
    update x_jobs j
    set state = 'queued',
        run_at = case
            when (select status from step) = 'waiting'
                 and not exists (
                     select 1 from step, x_job_events e
                     where step.event is not null and e.name = step.event and e.key = step.key
                       and e.created_at >= step.wait_since)
            then greatest((select wait_until from step), now())
            else now() end,
        attempt = greatest(j.attempt - 1, 0),
        lease_expires_at = null,
        claim_token = null,
        worker_id = null,
        body_pending = false
    where j.id = %(id)s and {{held_state(row=j)}} and j.claim_token = %(claim_token)s
      and exists (select 1 from step)
    returning j.id
), freed as (
    -- limits: a suspended run lets its concurrency slots go (x_job_leases)
    delete from x_job_leases l using suspended s where l.job_id = s.id and l.kind = 'concurrency'
)
select id from suspended

-- name: event_send
-- Store an event and end every wait on it in one statement: each waiting step of that event and
-- key that began at or before now gets the payload and is done; its job, when queued, is due now
-- (a job still running its attempt sees the step done when it suspends). One wake per queue.
with sent as (
    insert into x_job_events (name, key, payload, tenant_id, created_at, expires_at)
    values (%(name)s, %(key)s, %(payload)s::jsonb, %(tenant_id)s, now(),
            now() + make_interval(secs => %(ttl_seconds)s::float8))
    returning id
), ended as (
    update x_job_steps s
    set status = 'done', output = %(payload)s::jsonb, updated_at = now()
    where s.status = 'waiting' and s.event = %(name)s and s.key = %(key)s
      and s.wait_since <= now()
    returning s.job_id
), due as (
    update x_jobs j
    set run_at = case when j.state = 'queued' then least(j.run_at, now()) else j.run_at end
    where j.id in (select job_id from ended) and j.state in ('queued', 'running')
    returning j.queue, j.state
), woken as (
    select distinct d.queue from due d where d.state = 'queued'
), counted as (
    select count(*) as ended from ended
)
select c.ended, (select count(*) from sent) as stored, w.queue,
       case when w.queue is not null then (select pg_notify('ultimat3_jobs', w.queue)) end
           as notified
from counted c left join woken w on true

-- name: events_purge_expired
-- Delete up to limit expired events, oldest expiry first, through x_job_events_expiry. Rows
-- another purge holds are skipped. A purge pass gives its one clock reading as before; alone,
-- the statement reads now().
{{purge_oldest(table=x_job_events, alias=e, rows=events_expired, order=expires_at)}}
