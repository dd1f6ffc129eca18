-- name: lease_acquire
-- One slot of one key for a running attempt, fenced by its claim token: its own leftover
-- concurrency slot first, else the lowest slot with no live row (an expired row is free and is
-- taken over). A concurrency slot expires with the attempt's lease (the heartbeat renews both);
-- a rate stamp ttl_seconds after its grant. A full key answers the seconds until its first row
-- expires.
-- Acquirers of one key take turns: the statement first tries the key's transaction-scoped
-- advisory lock and, when another acquirer holds it, takes nothing and answers not locked (the
-- driver runs it again, and sheds the run when the key stays contended). So an insert never
-- waits on another acquirer's uncommitted row; one that meets a row committed after its
-- snapshot lands nothing and answers raced (free but not granted), and runs again with a fresh
-- snapshot.
-- The grant's moment is one clock_timestamp() read once the lock is held: the row's
-- acquired_at, a rate stamp's expiry (that moment plus ttl_seconds) and the job's started_at.
-- Any later grant of the same slot begins at or after that expiry, so by started_at no more
-- than the limit of runs start in any window of the rate's period.
with lock as (
    select pg_try_advisory_xact_lock(hashtextextended(%(key)s, 0)) as held
), stamp as (
    select clock_timestamp() as at from lock where lock.held
), attempt as (
    select j.id, j.lease_expires_at
    from x_jobs j
    where j.id = %(job_id)s and {{held_state(row=j)}} and j.claim_token = %(claim_token)s
), live as (
    select l.slot, l.job_id, l.expires_at
    from x_job_leases l
    where l.key = %(key)s and l.expires_at > now()
), candidate as (
    select s.slot
    from generate_series(0, %(limit)s::int - 1) as s(slot)
    where not exists (
        select 1 from live l
        where l.slot = s.slot
          and not (%(kind)s::text = 'concurrency' and l.job_id = %(job_id)s::uuid)
    )
    order by exists (select 1 from live l where l.slot = s.slot) desc, s.slot
    limit 1
), granted as (
    insert into x_job_leases as l (key, slot, kind, job_id, claim_token, acquired_at, expires_at)
    select %(key)s, c.slot, %(kind)s, a.id, %(claim_token)s, t.at,
           case when %(kind)s::text = 'rate'
                then t.at + make_interval(secs => %(ttl_seconds)s::float8)
                else a.lease_expires_at end
    from candidate c cross join attempt a cross join stamp t
    on conflict (key, slot) do update
    set kind = excluded.kind, job_id = excluded.job_id, claim_token = excluded.claim_token,
        acquired_at = excluded.acquired_at, expires_at = excluded.expires_at
    where l.expires_at <= now() or (excluded.kind = 'concurrency' and l.job_id = excluded.job_id)
    returning l.slot
), started as (
    update x_jobs j
    set started_at = (select t.at from stamp t)
    from granted g
    where j.id = %(job_id)s
    returning j.id
)
select (select g.slot from granted g) as slot,
       (select lock.held from lock) as locked,
       exists (select 1 from attempt) as fenced,
       exists (select 1 from candidate) as free,
       (select extract(epoch from min(l.expires_at) - now()) from live l)::float8 as retry_after,
       (select count(*) from started) as started

-- name: lease_give_back
-- An all-or-nothing acquire whose later request found its key full gives back the slot it had
-- just taken, fenced by the claim token.
delete from x_job_leases
where key = %(key)s and slot = %(slot)s and job_id = %(job_id)s and claim_token = %(claim_token)s
  and kind = 'concurrency'

-- name: lease_holders
-- The live rows of one key (the primary key's range), by slot.
select key, slot, kind, job_id, claim_token, acquired_at, expires_at
from x_job_leases
where key = %(key)s and expires_at > now()
order by slot

-- name: lease_abandon
-- A run that never started lets its concurrency slots go; its rate stamps stay spent.
delete from x_job_leases
where job_id = %(job_id)s and claim_token = %(claim_token)s and kind = 'concurrency'
returning slot

-- name: lease_release
-- An operator frees every concurrency slot of a key, live or expired.
delete from x_job_leases
where key = %(key)s and kind = 'concurrency'
returning slot

-- name: lease_list
-- The operator's view: every live row (of one kind, or all), by key then slot, at most limit,
-- with the worker whose claim still holds the row's job (a left join on the job's primary key:
-- none once the job left that claim). Keys sort by code point, whatever the database's
-- collation. Live rows are few (a held slot per running limited job, a stamp per recent start).
select l.key, l.slot, l.kind, l.job_id, l.claim_token, l.acquired_at, l.expires_at,
       j.worker_id
from x_job_leases l
left join x_jobs j on j.id = l.job_id and j.claim_token = l.claim_token and {{held_state(row=j)}}
where l.expires_at > now() and (%(kind)s::text is null or l.kind = %(kind)s::text)
order by l.key collate "C", l.slot
limit %(limit)s

-- fragment: grants_started(grants)
-- The granted runs (a CTE of job_id) stamped started at the grant's moment (the CTE stamp): the
-- started CTE of lease_acquire_many and job_settle_handoff.
started as (
    update x_jobs j
    set started_at = (select t.at from stamp t)
    from $grants g
    where j.id = g.job_id
    returning j.id
)

-- name: lease_acquire_many
-- One slot of one concurrency key for each of several running attempts (n, in the order given),
-- in one statement, fenced by each claim token: the runs of one key take its free slots (no live
-- row; an expired row is taken over) in that order, lowest slot first, as lease_acquire would
-- one after another. Each key's advisory lock is tried as in lease_acquire (keys in order, never
-- waiting); a run whose key's lock was taken, that holds a leftover slot of its own, or that lost
-- a race for its slot (a row committed after the snapshot) is answered without a slot and taken
-- again on its own by lease_acquire. The grant's moment is one clock_timestamp() read once the
-- locks are tried: the rows' acquired_at and the granted jobs' started_at.
with asked as (
    select a.n, a.job_id, a.token, a.key, a.lim
    from unnest(%(ids)s::uuid[], %(tokens)s::uuid[], %(keys)s::text[], %(limits)s::int[])
        with ordinality as a(job_id, token, key, lim, n)
), locks as (
    select k.key, pg_try_advisory_xact_lock(hashtextextended(k.key, 0)) as held
    from (select distinct a.key from asked a order by a.key) as k
), stamp as (
    select clock_timestamp() as at from (select count(*) from locks) as tried
), live as (
    select l.key, l.slot, l.job_id, l.expires_at
    from x_job_leases l
    where l.key in (select a.key from asked a) and l.expires_at > now()
), runs as (
    select a.n, a.job_id, a.token, a.key, a.lim, j.lease_expires_at, k.held as locked,
           exists (select 1 from live v where v.key = a.key and v.job_id = a.job_id) as leftover
    from asked a
    join x_jobs j on j.id = a.job_id and {{held_state(row=j)}} and j.claim_token = a.token
    join locks k on k.key = a.key
), ranked as (
    select r.n, r.job_id, r.token, r.key, r.lim, r.lease_expires_at,
           row_number() over (partition by r.key order by r.n) as rank
    from runs r
    where r.locked and not r.leftover
), free as (
    select k.key, s.slot, row_number() over (partition by k.key order by s.slot) as rank
    from (select r.key, min(r.lim) as lim from ranked r group by r.key) as k
    cross join lateral generate_series(0, k.lim - 1) as s(slot)
    where not exists (select 1 from live v where v.key = k.key and v.slot = s.slot)
), planned as (
    select r.n, r.job_id, r.token, r.key, r.lease_expires_at, f.slot
    from ranked r
    join free f on f.key = r.key and f.rank = r.rank
), granted as (
    insert into x_job_leases as l (key, slot, kind, job_id, claim_token, acquired_at, expires_at)
    select p.key, p.slot, 'concurrency', p.job_id, p.token, t.at, p.lease_expires_at
    from planned p cross join stamp t
    on conflict (key, slot) do update
    set kind = excluded.kind, job_id = excluded.job_id, claim_token = excluded.claim_token,
        acquired_at = excluded.acquired_at, expires_at = excluded.expires_at
    where l.expires_at <= now()
    returning l.key, l.job_id, l.slot, l.expires_at
), {{grants_started(grants=granted)}}, held as (
    select v.key, v.expires_at from live v
    union all
    select g.key, g.expires_at from granted g
)
select a.n, g.slot,
       r.n is not null as fenced,
       coalesce(r.locked, false) as locked,
       coalesce(r.leftover, false) as leftover,
       exists (select 1 from planned p where p.n = a.n) as free,
       (select extract(epoch from min(h.expires_at) - now()) from held h
        where h.key = a.key)::float8 as retry_after,
       (select count(*) from started) as started
from asked a
left join runs r on r.n = a.n
left join granted g on g.job_id = a.job_id
order by a.n
