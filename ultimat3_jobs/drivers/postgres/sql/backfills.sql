-- name: backfill_start
-- A run is recorded once (its job id is the key); no row is written while another run of the
-- same name and scope is completed, which is what blocks a new run.
insert into x_backfills as b (name, scope, run_id, environment, status, rows_done, batches_done)
select %(name)s, %(scope)s, %(run_id)s, %(environment)s, 'running', 0, 0
where not exists (
    select 1 from x_backfills c
    where c.name = %(name)s and c.scope = %(scope)s and c.status = 'completed'
      and c.run_id <> %(run_id)s
)
on conflict (run_id) do nothing
returning b.run_id

-- name: backfill_get
-- One run's ledger row, by its job id.
select name, scope, run_id, environment, status, cursor::text as cursor, rows_done,
       batches_done, error, started_at, updated_at, finished_at
from x_backfills
where run_id = %(run_id)s

-- name: backfill_advance
-- A batch is counted once: a replayed batch (its number not above what is recorded) and a run
-- no longer running write nothing. Its transaction (the batch's: handle's writes and the
-- batch's step, which stores the cursor) commits without waiting for the log flush: a
-- database crash before the flush loses the writes, the count and the step together, and the
-- batch replays from the cursor stored before it; the run's later synchronous commits (its
-- finish step, its settle) flush it.
{{backfill_count_batch}}

-- fragment: backfill_count_batch
update x_backfills
set cursor = %(cursor)s::jsonb, rows_done = rows_done + %(rows)s, batches_done = %(batch)s,
    updated_at = now()
from (select set_config('synchronous_commit', 'off', true) as setting) as deferred_flush
where run_id = %(run_id)s and status = 'running' and batches_done < %(batch)s
returning run_id

-- name: backfill_step_put
-- A batch's step recorded done (step_put_done's fenced insert) and the ledger's count of the
-- batch (backfill_advance's rule) in one statement: one round trip fewer per batch, in the
-- batch's transaction. A record that does not land answers nothing, and the caller rolls the
-- transaction back, the count with it.
with counted as (
{{backfill_count_batch}}
)
{{step_insert_done}}

-- name: backfill_finish
-- A running run ends once, completed or failed.
update x_backfills
set status = %(status)s, error = %(error)s, finished_at = now(), updated_at = now()
where run_id = %(run_id)s and status = 'running'
returning run_id

-- name: backfill_list
-- The newest runs first, bounded: what inspect_backfills projects.
select name, scope, run_id, environment, status, cursor::text as cursor, rows_done,
       batches_done, error, started_at, updated_at, finished_at
from x_backfills
order by started_at desc, id desc
limit %(limit)s
