-- name: pause_add
-- A pause is a row the claim reads; adding one twice changes nothing. A job name's pause also
-- flags its live rows paused, which takes them out of the claim index: the claim never walks a
-- paused backlog. A row enqueued as the pause lands may miss the flag; the claim's own read of
-- the pauses still holds it back.
with added as (
    insert into x_job_pauses (scope, target, paused_by, reason)
    values (%(scope)s, %(target)s, %(paused_by)s, %(reason)s)
    on conflict (scope, target) do nothing
    returning id
), flagged as (
    update x_jobs j
    set paused = true
    where %(scope)s = 'job' and j.name = %(target)s
      and j.state in ('queued', 'running') and not j.paused
)
select id from added

-- name: pause_remove
-- Removing a pause that is not there changes nothing. The delete waits for any enqueue that
-- read the pause (it holds the row's key-share lock), so pause_unflag, the next statement in
-- the same transaction, sees every row flagged under it.
delete from x_job_pauses
where scope = %(scope)s and target = %(target)s
returning id

-- name: pause_unflag
-- A resumed job name's rows go back into the claim index, through x_jobs_paused.
update x_jobs j
set paused = false
where j.name = %(target)s and j.paused

-- name: pause_list
-- Every pause, oldest first, for the operator surface.
select scope, target, paused_by, reason, created_at
from x_job_pauses
order by created_at, id
