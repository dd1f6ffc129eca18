-- name: clock_now
-- A purge pass reads the database's clock once and hands every delete an absolute cutoff, so
-- the targets of one pass (and its replay) agree on what is old.
select now() as now

-- name: job_purge_finished
-- At most limit finished jobs of one state, oldest finish first, through the partial index
-- x_jobs_finished; rows another transaction holds are skipped, so a purge never waits on an
-- operator or a settle. Steps go with their job (on delete cascade).
with doomed as (
    select j.id from x_jobs j
    where j.state = %(state)s and j.finished_at < %(before)s
    order by j.finished_at
    limit %(limit)s
    for update skip locked
)
delete from x_jobs j
using doomed
where j.id = doomed.id
returning j.id

-- name: job_count_finished
-- What job_purge_finished would delete, counted up to limit (a dry run reads, never locks).
select count(*) as count from (
    select 1 from x_jobs j
    where j.state = %(state)s and j.finished_at < %(before)s
    limit %(limit)s
) as found

-- name: event_count_expired
-- What events_purge_expired would delete at this cutoff, counted up to limit.
select count(*) as count from (
    select 1 from x_job_events e
    where e.expires_at <= coalesce(%(before)s::timestamptz, now())
    limit %(limit)s
) as found

-- name: counter_purge
-- At most limit counter rows of either period whose bucket starts before the cutoff, oldest
-- first; rows a settle holds are skipped.
with doomed as (
    select c.id from x_job_counters c
    where c.bucket < %(before)s
    order by c.bucket
    limit %(limit)s
    for update skip locked
)
delete from x_job_counters c
using doomed
where c.id = doomed.id
returning c.id

-- name: counter_count
-- What counter_purge would delete, counted up to limit.
select count(*) as count from (
    select 1 from x_job_counters c
    where c.bucket < %(before)s
    limit %(limit)s
) as found
