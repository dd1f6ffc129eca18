-- name: worker_heartbeat
-- One write per interval per worker process: the upsert renews the row (started_at kept) with
-- the demand counted in the same statement, bounded like queue_demand and skipped while
-- draining. Expired rows of other workers go in the same statement, so the table stays as small
-- as the fleet. The purge runs after the upsert (an unreferenced data-modifying CTE) and skips
-- rows another heartbeat holds, so two heartbeats never wait on each other's purge. The
-- levels and the count are queue_demand's.
with recursive {{queue_levels}}, demand as (
    select coalesce(jsonb_object_agg(r.name, r.ready), '{}'::jsonb) as demand
    from (
        select q.name, case when %(draining)s then 0 else {{queue_ready}} end as ready
        from unnest(%(queues)s::text[]) as q(name)
    ) as r
), purged as (
    delete from x_job_workers w
    where w.id in (
        select e.id
        from x_job_workers e
        where e.expires_at <= now() and e.id <> %(id)s
        order by e.id
        for update skip locked
    )
)
insert into x_job_workers as w (
    id, host, pid, queues, slots, demand, limits, started_at, heartbeat_at, expires_at
)
select %(id)s, %(host)s, %(pid)s, to_jsonb(%(queues)s::text[]), %(slots)s, d.demand,
       %(limits)s::jsonb, now(), now(), now() + make_interval(secs => %(ttl_seconds)s::float8)
from demand d
on conflict (id) do update
set host = excluded.host,
    pid = excluded.pid,
    queues = excluded.queues,
    slots = excluded.slots,
    demand = excluded.demand,
    limits = excluded.limits,
    heartbeat_at = excluded.heartbeat_at,
    expires_at = excluded.expires_at

-- name: worker_list
-- Only rows a heartbeat renewed in time: a row past expires_at is a lost worker, whether or not
-- a later heartbeat has purged it yet. Ids sort by code point, whatever the database's collation.
select id, host, pid, queues::text, slots, demand::text, started_at, heartbeat_at, expires_at,
       limits::text
from x_job_workers
where expires_at > now()
order by id collate "C"

-- name: worker_remove
-- A worker that stops says so at once rather than waiting out its ttl.
delete from x_job_workers
where id = %(id)s
returning id
