-- name: outbox_stage_many
-- Up to 1,000 staged jobs in one statement, written on the caller's own connection inside its
-- transaction, so the rows exist if and only if that transaction commits. Each id is its job's
-- id. The relay's wake is a NOTIFY, delivered at commit and dropped on rollback, sent only when
-- the caller asks (at most once per slot).
with staged as (
    insert into x_outbox ({{job_columns}})
    select {{job_values}}, clock_timestamp()
    from {{job_batch_rows}}
    order by r.ord
    returning id
)
select count(*), (select pg_notify('ultimat3_jobs_outbox', '') where %(notify)s)
from staged

-- name: outbox_claim
-- The relay takes unpublished rows under a lease with SKIP LOCKED, oldest first, never by a
-- "last id seen" mark: a row whose transaction commits after a later one is still found. A row
-- whose relay died is taken again once its lease ends.
with picked as (
    select id
    from x_outbox
    where published_at is null
      and (relay_lease_expires_at is null or relay_lease_expires_at < now())
    order by created_at, id
    limit %(limit)s
    for update skip locked
)
update x_outbox o
set relay_id = %(relay_id)s,
    relay_lease_expires_at = now() + make_interval(secs => %(lease_seconds)s)
from picked p
where o.id = p.id
returning o.id, o.name, o.queue, o.priority,
          -- A row already due publishes as due now, so the publish wakes the workers.
          case when o.run_at <= now() then null else o.run_at end as run_at,
          o.input::text, o.idempotency_key,
          o.tenant_id, o.enqueued_by, o.max_attempts, o.lease_seconds, o.traceparent,
          o.created_at

-- name: outbox_mark_published
-- One statement for a published batch, fenced by the relay's id: a relay whose lease was taken
-- over marks nothing (its publish was answered deduped by the job's id anyway).
update x_outbox
set published_at = now(), relay_lease_expires_at = null
where id = any(%(ids)s::uuid[]) and relay_id = %(relay_id)s and published_at is null
returning id

-- name: outbox_record_failure
-- A row that would not publish: counted, its error kept, tried again after a pause.
update x_outbox
set publish_attempts = publish_attempts + 1,
    last_error = %(error)s,
    relay_lease_expires_at = now() + make_interval(secs => %(retry_seconds)s)
where id = %(id)s and relay_id = %(relay_id)s and published_at is null
returning id

-- name: outbox_purge_published
-- Published rows are kept for a retention, then deleted a bounded batch at a time. A purge pass
-- gives its cutoff (its one clock reading minus the retention) as before.
with gone as (
    delete from x_outbox
    where id in (
        select id from x_outbox
        where published_at < coalesce(
            %(before)s::timestamptz, now() - make_interval(secs => %(retention_seconds)s)
        )
        limit %(limit)s
    )
        returning id
)
select count(*) from gone

-- fragment: outbox_published_old
-- Which published rows are old at a purge pass's cutoff: what outbox_count_published counts.
x_outbox o
    where o.published_at < %(before)s

-- name: outbox_count_published
-- What outbox_purge_published would delete at this cutoff, counted up to limit (a dry run).
{{count_capped(rows=outbox_published_old)}}
