-- fragment: counter_columns
-- A counter row's key and its six counts, in the order counter_deltas answers them.
name, period, bucket, completed, retried, dead, dropped, refused, cancelled

-- fragment: counter_upsert
-- The one counter upsert (every settle, the rescue, the cancel, the rollup), from a CTE
-- counter_deltas(counter_columns): each count is added to its bucket's row, made at zero on
-- first use. Rows in name and bucket order, so two statements lock counter rows in the same
-- order and never deadlock.
insert into x_job_counters ({{counter_columns}})
select d.name, d.period, d.bucket, d.completed, d.retried, d.dead, d.dropped, d.refused,
       d.cancelled
from counter_deltas d
order by d.name, d.bucket
on conflict (name, period, bucket) do update
set completed = x_job_counters.completed + excluded.completed,
    retried = x_job_counters.retried + excluded.retried,
    dead = x_job_counters.dead + excluded.dead,
    dropped = x_job_counters.dropped + excluded.dropped,
    refused = x_job_counters.refused + excluded.refused,
    cancelled = x_job_counters.cancelled + excluded.cancelled

-- name: counter_rollup
-- Minute rows whose hour ended more than keep_seconds ago are deleted and added to their hour
-- row in one statement: a bucket counts in one period only, and two processes folding at once
-- fold each row once (the second finds it deleted). Hours in name order, so two rollups lock
-- hour rows in the same order.
with folded as (
    delete from x_job_counters
    where period = 'minute'
      and date_trunc('hour', bucket) + interval '1 hour'
          < now() - make_interval(secs => %(keep_seconds)s)
    returning name, bucket, completed, retried, dead, dropped, refused, cancelled
), counter_deltas({{counter_columns}}) as (
    select f.name, 'hour', date_trunc('hour', f.bucket), sum(f.completed), sum(f.retried),
           sum(f.dead), sum(f.dropped), sum(f.refused), sum(f.cancelled)
    from folded f
    group by f.name, date_trunc('hour', f.bucket)
), hours as (
    {{counter_upsert}}
)
select count(*) from folded
