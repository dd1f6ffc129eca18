-- name: scheduler_cron_sync
-- A cron seen for the first time starts from now and never replays its history; a known cron
-- keeps its watermark. Answers every named cron's state.
with added as (
    insert into x_scheduler_tasks (name, watermark)
    select t.name, now() from unnest(%(names)s::text[]) as t(name)
    on conflict (name) do nothing
    returning name, watermark, last_fire_at, last_job_id
)
select name, watermark, last_fire_at, last_job_id from added
union all
select s.name, s.watermark, s.last_fire_at, s.last_job_id
from x_scheduler_tasks s
where s.name = any(%(names)s::text[])
  and not exists (select 1 from added a where a.name = s.name)

-- name: scheduler_cron_read
-- The operator's read: every named cron's state, none written; a cron never seen is absent.
select name, watermark, last_fire_at, last_job_id
from x_scheduler_tasks
where name = any(%(names)s::text[])

-- name: scheduler_fire
-- One occurrence in ONE statement: the watermark moves from its old value (the fence) to the
-- occurrence, only while the caller still holds the leader lease of this epoch, and the job is
-- inserted only where the watermark moves (and only when the occurrence dispatches, not when a
-- catch-up policy skips it). The job's idempotency key is the occurrence's. The fence locks the
-- cron's row first, so the insert and the move see the same row, and last_job_id names the job
-- this statement inserted: when a live job already holds the key, it keeps its old value.
with held_lease as (
    select 1 from x_scheduler_leaders
    where name = %(leader)s and holder = %(holder)s and epoch = %(epoch)s and expires_at > now()
), fence as materialized (
    select t.name from x_scheduler_tasks t
    where t.name = %(cron)s and t.watermark = %(old_watermark)s
      and exists (select 1 from held_lease)
    for update
), job_rows({{job_row_columns}}) as (
    -- An occurrence is due at once, whatever timing its request carries.
    select id, name, queue, priority, null::timestamptz, null::float8, input, idempotency_key,
           tenant_id, enqueued_by, max_attempts, lease_seconds, traceparent, ord
    from ({{job_param_row}}) as p({{job_row_columns}})
    where %(dispatch)s and exists (select 1 from fence)
), inserted as (
    {{job_insert(rows=job_rows, ending=job_insert_deduped)}}
), moved as (
    update x_scheduler_tasks t
    set watermark = %(occurrence)s,
        last_fire_at = case when %(dispatch)s then %(occurrence)s else t.last_fire_at end,
        last_job_id = coalesce((select i.id from inserted i), t.last_job_id),
        updated_at = now()
    where t.name = (select f.name from fence f)
    returning t.name
)
select (select count(*) from moved) as moved,
       (select id from inserted) as job_id,
       (select pg_notify('ultimat3_jobs', i.queue) from inserted i)

-- name: leader_attempt_elect
-- Take the lease when it is free or expired, or renew it when we hold it; the epoch moves only
-- when the holder changes. Answers nothing when another live holder has it.
insert into x_scheduler_leaders as l (name, holder, expires_at, epoch)
values (%(name)s, %(holder)s, now() + make_interval(secs => %(ttl_seconds)s), 1)
on conflict (name) do update
set holder = excluded.holder,
    expires_at = excluded.expires_at,
    epoch = case when l.holder = excluded.holder then l.epoch else l.epoch + 1 end
where l.holder = excluded.holder or l.expires_at < now()
returning epoch, expires_at, now() as store_now

-- name: leader_resign
-- A stopping leader lets go at once, so a follower need not wait for the lease to end.
update x_scheduler_leaders
set expires_at = now() - interval '1 second'
where name = %(name)s and holder = %(holder)s
returning name
