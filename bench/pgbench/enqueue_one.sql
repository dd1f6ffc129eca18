-- Insert-only ceiling for a single enqueue: the row job_enqueue writes, one autocommit
-- statement per script run.

insert into x_jobs (
    id, name, queue, priority, run_at, input, idempotency_key, tenant_id, enqueued_by,
    max_attempts, lease_seconds, traceparent
)
values (
    gen_random_uuid(), 'bench.pgbench', 'default', 0, now(), '{}'::jsonb, null, null, null,
    3, null, null
)
on conflict do nothing
returning id;
