"""Operator verbs: what a person does to jobs and queues, for the CLI and the admin alike.

Layer L4 (processes). Each verb about one job answers only when it acted, and otherwise refuses
with a :class:`~ultimat3_jobs.errors.JobsError` whose code says why (a miss is classified by
reading the job after the write missed, so the common case costs one statement). The bulk
form of each (``*_many``) refuses none: it answers a
:class:`~ultimat3_jobs.types.BulkResult` of how many jobs it moved and how many it left as they
were, whatever the reason.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.errors import (
    CancelReasonInvalid,
    DriverUnavailable,
    JobNotCancellable,
    JobNotFound,
    JobNotPromotable,
    JobNotRemovable,
    JobsError,
    StoreRefused,
)
from ultimat3_jobs.types import CRON_SCOPE, LIVE_STATES, BulkResult, JobState, PauseScope
from ultimat3_jobs.values import whole_number

RETRY_FAILED_CHUNK = 1000
"""``retry_failed`` requeues at most this many jobs per statement."""
CANCEL_REASON_MAX_LENGTH = 1000


def parse_job_id(value: uuid.UUID | str) -> uuid.UUID:
    """A job id from its text; text that is no UUID names no job (:class:`JobNotFound`)."""
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value).strip())
    except ValueError:
        raise JobNotFound(f"no job has id {value!r}: a job id is a UUID") from None


def _not_found(job_id: uuid.UUID) -> JobNotFound:
    return JobNotFound(f"no job has id {job_id}")


# -- one job ----------------------------------------------------------------------------------


def check_cancel_reason(reason: str | None) -> str | None:
    """A cancel reason as it is kept: stripped, ``None`` when empty. Refused
    (:class:`~ultimat3_jobs.errors.CancelReasonInvalid`): not text, longer than
    :data:`CANCEL_REASON_MAX_LENGTH` characters, or holding a NUL."""
    if reason is None:
        return None
    if not isinstance(reason, str):
        raise CancelReasonInvalid(f"reason must be text; got {type(reason).__name__}")
    reason = reason.strip()
    if len(reason) > CANCEL_REASON_MAX_LENGTH or "\x00" in reason:
        raise CancelReasonInvalid(
            f"reason must be at most {CANCEL_REASON_MAX_LENGTH} characters without NUL; got "
            f"{len(reason)} characters"
        )
    return reason or None


def cancel(
    driver: JobDriver,
    job_id: uuid.UUID | str,
    *,
    reason: str | None = None,
    cancelled_by: str | None = None,
) -> None:
    """Cancel a queued or running job: it becomes ``cancelled`` at once. A running attempt
    learns it at its next lease renewal (its heartbeat misses), stops its body, and writes
    nothing more. A ``reason`` (or an author, ``cancelled_by``) is kept in the job's errors as
    an ``ultimat3_jobs.Cancelled`` entry. Refused: :class:`~ultimat3_jobs.errors.JobNotFound`,
    :class:`~ultimat3_jobs.errors.JobNotCancellable` (already finished),
    :class:`~ultimat3_jobs.errors.CancelReasonInvalid`."""
    job_id = parse_job_id(job_id)
    reason = check_cancel_reason(reason)
    for _ in range(2):
        if driver.job_cancel(job_id=job_id, reason=reason, cancelled_by=cancelled_by):
            return
        record = driver.job_get(job_id=job_id)
        if record is None:
            raise _not_found(job_id)
        if record.state not in LIVE_STATES:
            raise JobNotCancellable(
                f"job {job_id} is {record.state.value}; only a queued or running job can be "
                "cancelled"
            )
        # Live again between the two reads (requeued meanwhile): try once more.
    raise JobNotCancellable(f"job {job_id} kept changing state; try again")


def requeue(driver: JobDriver, job_id: uuid.UUID | str) -> None:
    """Put a finished job (completed, failed, cancelled) back to ``queued``, due now, with its
    attempts reset and its error history kept. Refused:
    :class:`~ultimat3_jobs.errors.JobNotFound`,
    :class:`~ultimat3_jobs.errors.JobNotRequeueable` (queued or running: a running job must
    be cancelled first), :class:`~ultimat3_jobs.errors.JobDuplicate` (a live job holds its
    idempotency key)."""
    driver.job_requeue(job_id=parse_job_id(job_id))


def promote(driver: JobDriver, job_id: uuid.UUID | str) -> bool:
    """Make a queued job due now. Answers ``False`` when it was already due (left in its place
    in claim order). Refused: :class:`~ultimat3_jobs.errors.JobNotFound`,
    :class:`~ultimat3_jobs.errors.JobNotPromotable` (not queued)."""
    job_id = parse_job_id(job_id)
    if driver.job_promote(job_id=job_id):
        return True
    record = driver.job_get(job_id=job_id)
    if record is None:
        raise _not_found(job_id)
    if record.state is JobState.QUEUED:
        return False
    raise JobNotPromotable(
        f"job {job_id} is {record.state.value}; only a queued job can be made due now"
    )


def remove(driver: JobDriver, job_id: uuid.UUID | str) -> None:
    """Delete a job that is not running, with its history. Refused:
    :class:`~ultimat3_jobs.errors.JobNotFound`,
    :class:`~ultimat3_jobs.errors.JobNotRemovable` (running: cancel it first)."""
    job_id = parse_job_id(job_id)
    for _ in range(2):
        if driver.job_remove(job_id=job_id):
            return
        record = driver.job_get(job_id=job_id)
        if record is None:
            raise _not_found(job_id)
        if record.state is JobState.RUNNING:
            raise JobNotRemovable(
                f"job {job_id} is running; cancel it first, then remove it once it has stopped"
            )
        # Settled between the two reads: try once more.
    raise JobNotRemovable(f"job {job_id} kept changing state; try again")


# -- many jobs --------------------------------------------------------------------------------


def _bulk(
    verb: Callable[[JobDriver, Any], Any], driver: JobDriver, job_ids: Iterable[Any]
) -> BulkResult:
    moved = remaining = 0
    for job_id in dict.fromkeys(job_ids):
        try:
            acted = verb(driver, job_id)
        except (DriverUnavailable, StoreRefused):
            raise  # the store failed, not this job's state: the next ids would fail alike
        except JobsError:
            remaining += 1
            continue
        if acted is False:
            remaining += 1
        else:
            moved += 1
    return BulkResult(moved=moved, remaining=remaining)


def cancel_many(
    driver: JobDriver,
    job_ids: Iterable[uuid.UUID | str],
    *,
    reason: str | None = None,
    cancelled_by: str | None = None,
) -> BulkResult:
    """:func:`cancel` each job (repeated ids count once), each keeping ``reason``; refuses
    none but an invalid reason (:class:`~ultimat3_jobs.errors.CancelReasonInvalid`, before
    any job is touched)."""
    reason = check_cancel_reason(reason)
    return _bulk(partial(cancel, reason=reason, cancelled_by=cancelled_by), driver, job_ids)


def requeue_many(driver: JobDriver, job_ids: Iterable[uuid.UUID | str]) -> BulkResult:
    """:func:`requeue` each job (repeated ids count once); refuses none."""
    return _bulk(requeue, driver, job_ids)


def promote_many(driver: JobDriver, job_ids: Iterable[uuid.UUID | str]) -> BulkResult:
    """:func:`promote` each job (repeated ids count once); refuses none. A job already due
    counts as remaining: it was left as it was."""
    return _bulk(promote, driver, job_ids)


def remove_many(driver: JobDriver, job_ids: Iterable[uuid.UUID | str]) -> BulkResult:
    """:func:`remove` each job (repeated ids count once); refuses none."""
    return _bulk(remove, driver, job_ids)


def retry_failed(driver: JobDriver, name: str, limit: int | None = None) -> BulkResult:
    """Requeue the failed jobs of job name ``name``, oldest first, at most ``limit`` (``None``:
    all), :data:`RETRY_FAILED_CHUNK` per statement. Refuses none: a job whose idempotency key a
    live job holds stays failed, as do the older of failed jobs sharing a key. Answers how many
    moved and how many failed jobs of that name remain."""
    if limit is not None and not whole_number(limit, 0):
        raise ValueError(f"limit is a number of jobs, 0 or more, or None; got {limit!r}")
    moved = 0
    while True:
        ask = RETRY_FAILED_CHUNK if limit is None else min(RETRY_FAILED_CHUNK, limit - moved)
        result = driver.job_requeue_failed(name=name, limit=ask)
        moved += result.moved
        # A short batch means nothing more can move now (held keys, rows another transaction
        # holds); past the limit, the rest stays for a later call.
        if result.moved < ask or ask == 0 or (limit is not None and moved >= limit):
            return BulkResult(moved=moved, remaining=result.remaining)


# -- pauses -----------------------------------------------------------------------------------


def pause(
    driver: JobDriver, *, scope: PauseScope, target: str, paused_by: str = "", reason: str = ""
) -> bool:
    """Pause a queue, a job name or a cron. Answers whether it was not paused before (pausing
    twice keeps the first pause, its author and reason). Refused:
    :class:`~ultimat3_jobs.errors.PauseInvalid`."""
    return driver.pause_add(scope=scope, target=target, paused_by=paused_by, reason=reason)


def resume(driver: JobDriver, *, scope: PauseScope, target: str) -> bool:
    """Lift a pause. Answers whether there was one. Refused:
    :class:`~ultimat3_jobs.errors.PauseInvalid`."""
    return driver.pause_remove(scope=scope, target=target)


def pause_queue(driver: JobDriver, queue: str, *, paused_by: str = "", reason: str = "") -> bool:
    """Stop claims from ``queue``: its jobs stay queued until :func:`resume_queue`."""
    return pause(driver, scope="queue", target=queue, paused_by=paused_by, reason=reason)


def resume_queue(driver: JobDriver, queue: str) -> bool:
    """Let workers claim from ``queue`` again."""
    return resume(driver, scope="queue", target=queue)


def pause_job(driver: JobDriver, name: str, *, paused_by: str = "", reason: str = "") -> bool:
    """Stop claims of job name ``name`` in every queue; its jobs stay queued."""
    return pause(driver, scope="job", target=name, paused_by=paused_by, reason=reason)


def resume_job(driver: JobDriver, name: str) -> bool:
    """Let workers claim jobs named ``name`` again."""
    return resume(driver, scope="job", target=name)


def pause_cron(driver: JobDriver, name: str, *, paused_by: str = "", reason: str = "") -> bool:
    """Stop the scheduler firing cron ``name``; its missed occurrences follow its catch-up
    policy when it resumes."""
    return pause(driver, scope=CRON_SCOPE, target=name, paused_by=paused_by, reason=reason)


def resume_cron(driver: JobDriver, name: str) -> bool:
    """Let the scheduler fire cron ``name`` again."""
    return resume(driver, scope=CRON_SCOPE, target=name)


def pause_task(driver: JobDriver, name: str, *, paused_by: str = "", reason: str = "") -> bool:
    """Deprecated name of :func:`pause_cron` ("task" now means a ``django.tasks`` task only)."""
    warnings.warn("pause_task is deprecated: use pause_cron", DeprecationWarning, stacklevel=2)
    return pause_cron(driver, name, paused_by=paused_by, reason=reason)


def resume_task(driver: JobDriver, name: str) -> bool:
    """Deprecated name of :func:`resume_cron`."""
    warnings.warn("resume_task is deprecated: use resume_cron", DeprecationWarning, stacklevel=2)
    return resume_cron(driver, name)
