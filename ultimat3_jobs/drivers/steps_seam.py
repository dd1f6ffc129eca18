"""The seam's step store and event bus: :class:`StepMethods`, which :class:`JobDriver` inherits.

Layer L2 (the seam), like ``drivers/base.py``: imports L1 only. Every driver implements these
methods and passes ``tests/drivers/test_steps*.py``.

Rules every driver keeps:

* **Fenced.** Every write about a running attempt's steps (``step_put``, ``step_start_once``,
  ``step_wait``, ``step_wait_resolve``, ``job_suspend``) lands only while the job is
  ``running`` under the given claim token. A miss is not an error here: the method answers
  that nothing landed (``False`` or ``None``) and the runtime raises
  :class:`~ultimat3_jobs.errors.JobLeaseLost`.
* **Forward only.** A step moves ``started`` or ``waiting`` → ``done`` → ``compensated``; a
  write that would move it back lands nothing.
* **One clock.** ``wait_since``, ``wait_until``, an event's ``created_at`` and expiry are the
  store's clock. An event ends a wait when its name and key match and it was sent at or after
  the wait began.
"""

from __future__ import annotations

import abc
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ultimat3_jobs.types import StepKind, StepStatus

EVENT_PURGE_DEFAULT = 1000
"""``events_purge_expired`` deletes at most this many events per call unless told."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StepRecord:
    """One stored step as a driver answers it. ``output`` is the stored JSON form, parsed;
    ``key`` is ``""`` for a wait on an event without a key and ``None`` for a step that is not a
    wait for an event."""

    name: str
    seq: int
    kind: StepKind
    status: StepStatus
    output: Any = None
    error: Any = None
    event: str | None = None
    key: str | None = None
    wait_since: datetime | None = None
    wait_until: datetime | None = None
    updated_at: datetime | None = None


def wait_key(event: str | None, key: str | None) -> str | None:
    """The ``key`` a wait stores and matches on (see :class:`StepRecord`): ``""`` for an event
    sent without a key, ``None`` for a wait that is not for an event."""
    return (key or "") if event is not None else None


STEP_PUT_STATUSES: tuple[StepStatus, ...] = ("done", "compensated")
"""What ``step_put`` writes; the other statuses have their own methods."""


def check_step_put_status(status: str) -> None:
    """Refuse a ``step_put`` of any status but ``done`` or ``compensated`` (a driver bug, not a
    user's input: a ``ValueError``, nothing written)."""
    if status not in STEP_PUT_STATUSES:
        raise ValueError(f"step_put writes 'done' or 'compensated'; got {status!r}")


@dataclass(frozen=True, slots=True)
class EventSent:
    """What ``event_send`` did: ``ended`` waits it ended (their jobs are due now)."""

    ended: int


class StepMethods(abc.ABC):
    """The step store and the event bus. Methods are named ``noun_verb[_many]`` like the rest
    of the seam; every argument is keyword-only."""

    @abc.abstractmethod
    def step_get_many(self, *, job_id: uuid.UUID) -> list[StepRecord]:
        """Every stored step of a job, in the order each was first written (``seq``); empty
        for a job without steps or a job that is gone."""

    @abc.abstractmethod
    def step_put(
        self,
        *,
        job_id: uuid.UUID,
        claim_token: uuid.UUID,
        name: str,
        seq: int,
        kind: StepKind,
        status: StepStatus,
        output_json: str = "null",
        error_json: str | None = None,
    ) -> bool:
        """Record a step ``done`` (with ``output_json``, JSON text) or ``compensated`` (its
        output kept, ``error_json`` stored when given), fenced. ``done`` lands on a new step and
        over ``started`` or ``waiting``; ``compensated`` only over ``done``. Answers whether it
        landed."""

    @abc.abstractmethod
    def step_start_once(
        self, *, job_id: uuid.UUID, claim_token: uuid.UUID, name: str, seq: int
    ) -> bool:
        """Record a ``once`` step ``started`` before its function runs, fenced. A step already
        stored under that name is left alone. Answers whether it landed."""

    @abc.abstractmethod
    def step_wait(
        self,
        *,
        job_id: uuid.UUID,
        claim_token: uuid.UUID,
        name: str,
        seq: int,
        kind: StepKind,
        event: str | None = None,
        key: str | None = None,
        seconds: float | None = None,
        until: datetime | None = None,
    ) -> StepRecord | None:
        """Begin a sleep (``kind="sleep"``) or a wait for ``event`` and ``key``
        (``kind="event"``), fenced: the step is stored ``waiting`` with ``wait_since`` now and
        ``wait_until`` ``seconds`` from now, or ``until``, on the store's clock. A step already
        stored under that name is left alone. Answers the stored step, or ``None`` when nothing
        landed."""

    @abc.abstractmethod
    def step_wait_resolve(
        self, *, job_id: uuid.UUID, claim_token: uuid.UUID, name: str
    ) -> StepRecord | None:
        """End a ``waiting`` step when it may end, fenced: ``done`` with the payload of the
        first matching event sent at or after ``wait_since``, else ``done`` with ``null`` once
        the store's clock reaches ``wait_until``; otherwise it stays ``waiting``. Answers the
        step as it then stands, or ``None`` when the fence missed or there is no such step."""

    @abc.abstractmethod
    def job_suspend(self, *, job_id: uuid.UUID, claim_token: uuid.UUID, step: str) -> bool:
        """Give a running attempt back while its step ``step`` waits, fenced: the job is
        ``queued`` again, due at the step's ``wait_until`` (now, when the step is no longer
        waiting or a matching event was sent meanwhile), its attempt count one less, its lease
        and claim cleared; no error entry, no counter. Answers whether it landed."""

    @abc.abstractmethod
    def event_send(
        self,
        *,
        name: str,
        key: str | None = None,
        payload_json: str = "null",
        tenant_id: str | None = None,
        ttl_seconds: float,
    ) -> EventSent:
        """Store an event (expiring ``ttl_seconds`` from now) and, in the same write, end every
        wait on it: each ``waiting`` step of that event and key whose wait began at or before
        now is ``done`` with the payload, and its job, when queued, is due now; the workers of
        those jobs' queues are woken."""

    @abc.abstractmethod
    def events_purge_expired(
        self, *, limit: int = EVENT_PURGE_DEFAULT, before: datetime | None = None
    ) -> int:
        """Delete up to ``limit`` expired events, oldest expiry first. Answers how many.
        ``before`` (a purge pass's one clock reading) is the cutoff instead of the store's
        clock: events that expired at or before it go."""
