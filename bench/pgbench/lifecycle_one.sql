-- Ceiling (a): one job per script run, as three autocommit statements, with no Python in the
-- path: insert one row (the shape of job_enqueue), claim one (the job_claim seek, `for update
-- skip locked`), ack it fenced by its claim token (job_ack_many, counter included).
-- A claim that finds nothing sets the nil uuid, which the ack matches to no row.

insert into x_jobs (
    id, name, queue, priority, run_at, input, idempotency_key, tenant_id, enqueued_by,
    max_attempts, lease_seconds, traceparent
)
values (
    gen_random_uuid(), 'bench.pgbench', 'default', 0, now(), '{}'::jsonb, null, null, null,
    3, null, null
)
on conflict do nothing;

with candidates as (
    select c.id
    from (
        select q.name
        from unnest(array['default']::text[]) as q(name)
        where not exists (
            select 1 from x_job_pauses p where p.scope = 'queue' and p.target = q.name
        )
    ) as q
    cross join lateral (
        select j.id, j.priority, j.run_at
        from x_jobs j
        where j.queue = q.name
          and j.state = 'queued'
          and j.run_at <= now()
          and not exists (
              select 1 from x_job_pauses p where p.scope = 'job' and p.target = j.name
          )
        order by j.priority desc, j.run_at
        limit 1
        for update of j skip locked
    ) as c
    order by c.priority desc, c.run_at
    limit 1
), claimed as (
    update x_jobs j
    set state = 'running',
        attempt = j.attempt + 1,
        claim_token = gen_random_uuid(),
        worker_id = 'pgbench-:client_id',
        started_at = now(),
        lease_expires_at = now() + make_interval(secs => coalesce(j.lease_seconds, 300))
    from candidates c
    where j.id = c.id
    returning j.id, j.claim_token
)
select coalesce((select id from claimed), '00000000-0000-0000-0000-000000000000') as job_id,
       coalesce((select claim_token from claimed), '00000000-0000-0000-0000-000000000000')
           as claim_token
\gset

with done as (
    update x_jobs j
    set state = 'completed',
        result = a.result::jsonb,
        finished_at = now(),
        lease_expires_at = null
    from unnest(array[':job_id']::uuid[], array[':claim_token']::uuid[], array['null']::text[])
        as a(id, token, result)
    where j.id = a.id and j.state = 'running' and j.claim_token = a.token
    returning j.id, j.name
), counted as (
    insert into x_job_counters (name, period, bucket, completed)
    select d.name, 'minute', date_trunc('minute', now()), count(*)
    from done d
    group by d.name
    order by d.name
    on conflict (name, period, bucket)
    do update set completed = x_job_counters.completed + excluded.completed
)
select id from done;
