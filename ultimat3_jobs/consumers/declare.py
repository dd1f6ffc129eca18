"""``consumer()``: a job that runs one consumer's turns for a while, and a supervisor cron job
that keeps one such run queued or running per consumer (its idempotency key is the consumer's).

Declare consumers where jobs are declared (an app's ``jobs.py``), so that every worker and
scheduler process declares them too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ultimat3_jobs.consumers import loop
from ultimat3_jobs.consumers.source import Cursor, Source, as_source
from ultimat3_jobs.consumers.tables import ConsumerCursor
from ultimat3_jobs.errors import ConsumerInvalid, ConsumerUnknown
from ultimat3_jobs.factories.declared import Declared
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.model.definitions import JobHandle, Retry, cron, job
from ultimat3_jobs.model.origin import Origin
from ultimat3_jobs.types import EnqueueResult
from ultimat3_jobs.values import whole_number

NAME_PATTERN = r"[a-z0-9][a-z0-9_.-]{0,79}"
BATCH_SIZE_MAX = 10_000
_NAME = re.compile(NAME_PATTERN)
_consumers: Declared[ConsumerHandle] = Declared(
    "consumer", lambda message: ConsumerUnknown(message, field="name")
)


@dataclass(frozen=True, slots=True)
class ConsumerState:
    """Where one consumer stands: its committed cursor, how many items it handled in how many
    turns, when the cursor last moved, and its lag (items after the cursor; ``None`` when the
    source cannot tell)."""

    name: str
    cursor: Cursor | None
    handled: int
    turns: int
    moved_at: datetime | None
    lag: int | None


class ConsumerHandle:
    """What :func:`consumer` answers: ``job`` runs the turns, ``supervisor`` (a cron job)
    keeps one run live; ``start()`` enqueues a run now (deduplicated like the supervisor's)."""

    def __init__(self, name: str, *, source: Source, handle: loop.Handle, batch_size: int) -> None:
        self.name = name
        self.source = source
        self.handle = handle
        self.batch_size = batch_size
        self.job: JobHandle
        self.supervisor: JobHandle
        self.origin = Origin(
            label=f"consumer:{name}",
            refused=frozenset({job_name(name), f"{job_name(name)}.supervisor"}),
        )

    def __repr__(self) -> str:
        return f"<consumer {self.name}>"

    @property
    def key(self) -> str:
        """The idempotency key of its runs: one live run per consumer."""
        return job_name(self.name)

    def start(self) -> EnqueueResult:
        """Enqueue a run unless one is queued or running (then answers that one, ``deduped``)."""
        return self.job.using(idempotency_key=self.key, publish="now").enqueue()

    def state(self) -> ConsumerState:
        row = ConsumerCursor.objects.using(loop.database()).filter(name=self.name).first()
        cursor = row.cursor if row else None
        return ConsumerState(
            name=self.name,
            cursor=cursor,
            handled=row.handled if row else 0,
            turns=row.turns if row else 0,
            moved_at=row.moved_at if row else None,
            lag=self.source.lag(cursor),
        )


def job_name(name: str) -> str:
    """The job of consumer ``name`` (its supervisor is this with ``.supervisor``)."""
    return f"consumer:{name}"


def consumer(
    name: str,
    *,
    source: Any,
    handle: loop.Handle,
    batch_size: int = 100,
    queue: str | None = None,
    run_seconds: float = 55.0,
    idle_seconds: float = 1.0,
    supervise: str = "* * * * *",
    retry: Retry | None = None,
) -> ConsumerHandle:
    """Declare consumer ``name``: ``handle(items)`` is called with each batch of at most
    ``batch_size`` items that ``source`` answers after the committed cursor, inside the
    transaction that then moves the cursor (see :mod:`ultimat3_jobs.consumers.loop`).

    ``source``: a queryset or model (read in primary-key order), ``rows_after(qs, key=...)``,
    or a callable ``read(after, limit)``. A run takes turns for ``run_seconds`` (waiting
    ``idle_seconds`` when nothing is new); the supervisor, a cron job on ``supervise`` (UTC),
    enqueues the next run. Jobs the handle enqueues carry ``enqueued_by="consumer:<name>"``;
    enqueueing the consumer itself from its handle is refused (``X_CONSUMER_SELF_ENQUEUE``).
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConsumerInvalid(f"consumer name must match {NAME_PATTERN}; got {name!r:.80}")
    if name in _consumers:
        raise ConsumerInvalid(f"consumer {name!r} is already declared", field="name")
    if not callable(handle):
        raise ConsumerInvalid(f"consumer {name!r}: handle must be callable", field="handle")
    if not whole_number(batch_size, 1, BATCH_SIZE_MAX):
        raise ConsumerInvalid(
            f"consumer {name!r}: batch_size must be an integer from 1 to {BATCH_SIZE_MAX}; got "
            f"{batch_size!r:.40}",
            field="batch_size",
        )
    for option, value in (("run_seconds", run_seconds), ("idle_seconds", idle_seconds)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 3600:
            raise ConsumerInvalid(
                f"consumer {name!r}: {option} must be a number of seconds from 0 to 3600 "
                f"(exclusive); got {value!r:.40}",
                field=option,
            )
    spec = ConsumerHandle(name, source=as_source(source), handle=handle, batch_size=batch_size)

    def run(ctx: JobContext) -> dict[str, Any]:
        return loop.run(
            ctx,
            spec.name,
            spec.source,
            spec.handle,
            batch_size=spec.batch_size,
            origin=spec.origin,
            run_seconds=float(run_seconds),
            idle_seconds=float(idle_seconds),
        )

    def supervise_run(ctx: JobContext) -> str:
        return str(spec.start().status)

    run.__doc__ = f"Take the turns of consumer {name}."
    supervise_run.__doc__ = f"Keep one run of consumer {name} queued or running."
    spec.job = job(
        name=job_name(name),
        queue=queue,
        tenant="none",
        retry=retry or Retry(attempts=5, backoff_base_seconds=1, backoff_cap_seconds=30),
        timeout=run_seconds + 60,
    )(run)
    spec.supervisor = cron(
        cron=supervise, tz="UTC", name=f"{job_name(name)}.supervisor", queue=queue, tenant="none"
    )(supervise_run)
    _consumers.add(name, spec)
    return spec


def registered_consumers() -> list[ConsumerHandle]:
    """Every declared consumer, by name."""
    return _consumers.all()


def consumer_named(name: str) -> ConsumerHandle:
    """The consumer declared as ``name`` (``X_CONSUMER_UNKNOWN`` otherwise)."""
    return _consumers.get(name)
