-- name: clock_now
-- A purge pass reads the database's clock once and hands every delete an absolute cutoff, so
-- the targets of one pass (and its replay) agree on what is old.
select now() as now

-- fragment: finished_jobs_old
-- Which finished jobs are old (of one state, finished before the cutoff): what
-- job_purge_finished deletes and job_count_finished counts.
x_jobs j
    where j.state = %(state)s and j.finished_at < %(before)s

-- fragment: events_expired
-- Which events have expired (at the pass's cutoff, or now() alone): what events_purge_expired
-- deletes and event_count_expired counts.
x_job_events e
    where e.expires_at <= coalesce(%(before)s::timestamptz, now())

-- fragment: counters_old
-- Which counter rows are old (their bucket starts before the cutoff): what counter_purge
-- deletes and counter_count counts.
x_job_counters c
    where c.bucket < %(before)s

-- fragment: purge_oldest(table, alias, rows, order)
-- A purge's one batch: at most limit of the rows the fragment $rows names, oldest first by
-- $order (the column its index keeps in order), deleted; rows another transaction holds are
-- skipped, so a purge never waits on an operator, a settle or another purge. Answers the ids.
with doomed as (
    select $alias.id from {{$rows}}
    order by $alias.$order
    limit %(limit)s
    for update skip locked
)
delete from $table $alias
using doomed
where $alias.id = doomed.id
returning $alias.id

-- fragment: count_capped(rows)
-- A purge's dry run: how many of the rows the fragment $rows names it would delete, counted up
-- to limit (reads, never locks).
select count(*) as count from (
    select 1 from {{$rows}}
    limit %(limit)s
) as found

-- name: job_purge_finished
-- At most limit finished jobs of one state, oldest finish first, through the partial index
-- x_jobs_finished; rows another transaction holds are skipped, so a purge never waits on an
-- operator or a settle. Steps go with their job (on delete cascade).
{{purge_oldest(table=x_jobs, alias=j, rows=finished_jobs_old, order=finished_at)}}

-- name: job_count_finished
-- What job_purge_finished would delete, counted up to limit (a dry run reads, never locks).
{{count_capped(rows=finished_jobs_old)}}

-- name: event_count_expired
-- What events_purge_expired would delete at this cutoff, counted up to limit.
{{count_capped(rows=events_expired)}}

-- name: counter_purge
-- At most limit counter rows of either period whose bucket starts before the cutoff, oldest
-- first; rows a settle holds are skipped.
{{purge_oldest(table=x_job_counters, alias=c, rows=counters_old, order=bucket)}}

-- name: counter_count
-- What counter_purge would delete, counted up to limit.
{{count_capped(rows=counters_old)}}
