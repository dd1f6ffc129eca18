"""What the seam's interfaces and every driver share: the bounds the seam sets, the argument
checks that refuse what every driver refuses, the settle log, the write-now switch and the wake
protocol. Imported through :mod:`ultimat3_jobs.drivers.base` by drivers of other projects."""

from __future__ import annotations

import contextlib
import contextvars
import logging
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from ultimat3_jobs.errors import JobClaimQueuesEmpty, JobPageInvalid, PauseInvalid
from ultimat3_jobs.types import (
    COUNTER_PERIODS,
    NACK_ACTIONS,
    PAUSE_SCOPES,
    SETTLE_ACTIONS,
    CounterPeriod,
    Heartbeat,
    JobState,
    SettleItem,
)
from ultimat3_jobs.values import whole_number

ENQUEUE_CHUNK = 1000
"""``job_enqueue_many`` writes at most this many jobs per statement."""

QUEUE_DEMAND_ROWS = 1000
"""``queue_demand`` counts ready jobs up to this many per queue: a bounded read at any depth."""

RESCUE_BATCH_DEFAULT = 500

OUTBOX_ERROR_CHARS = 2000
"""``outbox_record_failure`` keeps this many characters of a row's error."""


def outbox_error_text(error: str) -> str:
    """A publish error as every outbox keeps it: text PostgreSQL can store (a NUL, or a lone
    surrogate, would make the write itself fail), cut to :data:`OUTBOX_ERROR_CHARS`."""
    text = error.encode("utf-8", "replace").decode("utf-8").replace("\x00", "\ufffd")
    return text[:OUTBOX_ERROR_CHARS]


JOB_PAGE_MAX = 500
"""``job_list`` answers at most this many jobs per page."""

QUEUE_STATS_ROWS = 100
"""``queue_stats`` counts finished jobs (completed, failed, cancelled) up to this many per job
name and state: a bounded read however much history the table keeps. Small on purpose: each
counted row is a heap read, and on PostgreSQL a larger bound lifts the statement's estimated
cost past ``jit_above_cost``, where JIT compilation costs more than the read itself."""

settle_logger = logging.getLogger("ultimat3_jobs.settle")

_write_now = contextvars.ContextVar("ultimat3_jobs_write_now", default=False)


@contextlib.contextmanager
def write_now() -> Iterator[None]:
    """Within this block an enqueue is written at once, even inside the caller's transaction
    (``publish="now"``): a driver that waits for the caller's commit asks :func:`writes_now`."""
    token = _write_now.set(True)
    try:
        yield
    finally:
        _write_now.reset(token)


def writes_now() -> bool:
    """Whether the current enqueue was asked to be written at once (see :func:`write_now`)."""
    return _write_now.get()


class WakeSubscription(Protocol):
    """A live subscription to enqueue wakes (see :meth:`JobDriver.wake_subscribe`)."""

    def is_live(self) -> bool:
        """Whether wakes are known to arrive now (proven since the last reconnect)."""

    def close(self) -> None:
        """Stop listening; no ``on_wake`` call follows."""


wake_logger = logging.getLogger("ultimat3_jobs.wake")


def call_on_wake(on_wake: Callable[[str], None], queue: str) -> None:
    """Call a subscriber's ``on_wake(queue)`` as every driver does: an exception in it is
    logged, never raised (a wake is a hint; the poll still finds the job)."""
    try:
        on_wake(queue)
    except Exception:
        wake_logger.exception(
            "jobs.wake.callback_failed: on_wake(%r) raised",
            queue,
            extra={"event": "jobs.wake.callback_failed", "queue": queue},
        )


def check_settle_action(action: str) -> None:
    """Refuse a settle item whose action is none of :data:`SETTLE_ACTIONS` (a caller's bug: a
    ``ValueError``, nothing written)."""
    if action not in SETTLE_ACTIONS:
        raise ValueError(f"a settle action is one of {SETTLE_ACTIONS}; got {action!r}")


def check_nack_action(action: str) -> None:
    """Refuse a ``job_nack`` whose action is none of ``retry``, ``fail``, ``drop`` (a caller's
    bug: a ``ValueError``, nothing written)."""
    if action not in NACK_ACTIONS:
        raise ValueError(f"a nack action is 'retry', 'fail' or 'drop'; got {action!r}")


def check_heartbeat_queues(queues: Sequence[str]) -> list[str]:
    """Refuse a worker heartbeat whose ``queues`` is one string instead of a list of names;
    answer the queues as a de-duplicated list in the caller's order."""
    if isinstance(queues, str):
        raise TypeError("queues must be a sequence of queue names, not one string")
    return list(dict.fromkeys(queues))


def check_queue_stats_limit(limit: int) -> None:
    """Refuse a ``queue_stats`` limit that is not a positive integer."""
    if not whole_number(limit, 1):
        raise ValueError(f"queue_stats counts up to a positive limit; got {limit!r}")


def check_claim_queues(queues: Sequence[str]) -> list[str]:
    """Refuse a claim that names no queue (:class:`JobClaimQueuesEmpty`); answer the queues
    as a de-duplicated list in the caller's order."""
    if isinstance(queues, str) or not queues:
        raise JobClaimQueuesEmpty(
            f"a claim must name at least one queue, as a list of names; got {queues!r}"
        )
    return list(dict.fromkeys(queues))


PAUSE_TARGET_MAX_LENGTH = 200


def check_pause(scope: str, target: str) -> None:
    if (
        scope not in PAUSE_SCOPES
        or not isinstance(target, str)
        or not 1 <= len(target) <= PAUSE_TARGET_MAX_LENGTH
    ):
        raise PauseInvalid(
            f"a pause needs scope in {PAUSE_SCOPES} and a target of 1 to "
            f"{PAUSE_TARGET_MAX_LENGTH} characters; "
            f"got scope={scope!r}, target={target!r:.80}"
        )


@dataclass(frozen=True, slots=True)
class JobListQuery:
    """The checked arguments of :meth:`JobDriver.job_list`: each filter ``None`` (any) or a
    de-duplicated list; ``search_id`` is ``search`` read as a job id, when it is one."""

    states: list[str] | None
    queues: list[str] | None
    names: list[str] | None
    tenant: str | None
    search: str | None
    search_id: uuid.UUID | None
    after: uuid.UUID | None
    limit: int


def _names_filter(option: str, values: Sequence[str] | None) -> list[str] | None:
    if values is None:
        return None
    if isinstance(values, str) or not all(isinstance(value, str) for value in values):
        raise JobPageInvalid(f"{option} must be a list of strings; got {values!r}")
    return list(dict.fromkeys(values)) or None


def check_job_list(
    *,
    states: Sequence[str] | None,
    queues: Sequence[str] | None,
    names: Sequence[str] | None,
    tenant: str | None,
    search: str | None,
    after: uuid.UUID | str | None,
    limit: int,
) -> JobListQuery:
    """Refuse a list request that breaks a rule (:class:`JobPageInvalid`): a page size outside
    1..:data:`JOB_PAGE_MAX`, an unknown state, a cursor that is not a job id, a filter that is
    a bare string. An empty filter means any, like ``None``."""
    if not whole_number(limit, 1, JOB_PAGE_MAX):
        raise JobPageInvalid(f"a page holds 1 to {JOB_PAGE_MAX} jobs; got limit={limit!r}")
    checked_states = _names_filter("states", states)
    known = {state.value for state in JobState}
    unknown = [state for state in checked_states or () if state not in known]
    if unknown:
        raise JobPageInvalid(f"states must be among {sorted(known)}; got {unknown!r}")
    if checked_states is not None:
        checked_states = [JobState(state).value for state in checked_states]
    if tenant is not None and not isinstance(tenant, str):
        raise JobPageInvalid(f"tenant must be a string; got {tenant!r}")
    if search is not None and not isinstance(search, str):
        raise JobPageInvalid(f"search must be a string; got {search!r}")
    search = search.strip() or None if search is not None else None
    search_id = None
    if search is not None:
        try:
            search_id = uuid.UUID(search)
        except ValueError:
            search_id = None
    if after is not None and not isinstance(after, uuid.UUID):
        try:
            after = uuid.UUID(str(after).strip())
        except ValueError:
            raise JobPageInvalid(
                f"a cursor is the id of the last job of a page; got {after!r}"
            ) from None
    return JobListQuery(
        states=checked_states,
        queues=_names_filter("queues", queues),
        names=_names_filter("names", names),
        tenant=tenant,
        search=search,
        search_id=search_id,
        after=after,
        limit=limit,
    )


def cursor_gone(after: uuid.UUID) -> JobPageInvalid:
    return JobPageInvalid(
        f"the job at the cursor ({after}) is gone (removed, or dropped by its worker); "
        "list again from the first page"
    )


def check_counter_period(period: str) -> CounterPeriod:
    if period not in COUNTER_PERIODS:
        raise ValueError(f"a counter period is one of {COUNTER_PERIODS}; got {period!r}")
    return period


def log_unowned(operation: str, job_id: uuid.UUID, claim_token: uuid.UUID) -> None:
    settle_logger.info(
        "jobs.settle.unowned: %s of job %s did not land (no running attempt holds claim %s)",
        operation,
        job_id,
        claim_token,
        extra={"event": "jobs.settle.unowned", "job_id": str(job_id), "operation": operation},
    )


def owned[L](landed: L, operation: str, job_id: uuid.UUID, claim_token: uuid.UUID) -> L:
    """``landed`` (what the write answered: ``False`` or ``None`` when nothing landed), after
    :func:`log_unowned` when the write about a running attempt did not land (no running
    attempt holds ``claim_token``)."""
    if not landed:
        log_unowned(operation, job_id, claim_token)
    return landed


def log_unsettled(items: Sequence[SettleItem], landed: set[uuid.UUID]) -> None:
    """:func:`log_unowned` for each item of a ``job_settle_many`` that did not land, named as
    its single write would be (``ack``, ``nack (retry)``, ...)."""
    if len(landed) == len(items):  # each landed once: every one (no id hashed per item)
        return
    for item in items:
        if item.job_id not in landed:
            operation = "ack" if item.action == "complete" else f"nack ({item.action})"
            log_unowned(operation, item.job_id, item.claim_token)


def log_lost_beats(attempts: Sequence[tuple[uuid.UUID, uuid.UUID]], beat: Heartbeat) -> None:
    """Log ``jobs.settle.unowned`` for each attempt a heartbeat found lost (not busy)."""
    held = beat.held
    for job_id, token in attempts:
        if job_id not in held:
            log_unowned("heartbeat", job_id, token)
