-- Insert-only ceiling for enqueue_many: 1,000 rows (the driver's chunk) in one autocommit
-- statement per script run.

insert into x_jobs (
    id, name, queue, priority, run_at, input, idempotency_key, tenant_id, enqueued_by,
    max_attempts, lease_seconds, traceparent
)
select gen_random_uuid(), 'bench.pgbench', 'default', 0, now(), '{}'::jsonb, null, null, null,
       3, null, null
from generate_series(1, 1000)
on conflict do nothing
returning id;
