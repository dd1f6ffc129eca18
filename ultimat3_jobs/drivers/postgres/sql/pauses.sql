-- name: pause_add
-- A pause is a row the claim reads; adding one twice changes nothing.
insert into x_job_pauses (scope, target, paused_by, reason)
values (%(scope)s, %(target)s, %(paused_by)s, %(reason)s)
on conflict (scope, target) do nothing
returning id

-- name: pause_remove
-- Removing a pause that is not there changes nothing.
delete from x_job_pauses
where scope = %(scope)s and target = %(target)s
returning id

-- name: pause_list
-- Every pause, oldest first, for the operator surface.
select scope, target, paused_by, reason, created_at
from x_job_pauses
order by created_at, id
