"""``purge(name, targets=[...])``: the one caller of every retention delete.

Layer: factories (imports core, the seam and the job model). A purge is a job (or a cron job)
whose body is made of durable steps: a ``clock`` step reads the store's clock once, then each
target is one step that deletes what is older than the clock minus its retention, a bounded
batch at a time, and stores how many rows it deleted. A replayed pass (the worker died midway)
skips the targets already done and deletes by the same cutoff.

The targets are :class:`PurgeTarget` values; :mod:`ultimat3_jobs.factories.retention` makes the
built-in ones (finished jobs by state, published outbox rows, expired events, old counters), each
with its own ``RETENTION_*`` setting.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.drivers.retention_seam import PURGE_LIMIT_MAX
from ultimat3_jobs.errors import JobDeclarationInvalid
from ultimat3_jobs.factories.declared import Declared
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.model.definitions import JobHandle, job
from ultimat3_jobs.model.definitions import cron as cron_job
from ultimat3_jobs.values import whole_number

TARGET_NAME_PATTERN = r"[a-z0-9][a-z0-9_.:-]{0,99}"
MAX_BATCHES_DEFAULT = 1000
"""A target deletes at most this many batches per pass; what is left waits for the next pass,
so one pass never runs for hours behind a huge backlog."""
COUNT_CAP = 1_000_000
"""A dry run counts each target up to this many rows."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PurgeTarget:
    """One table (or one state of one) a purge sweeps.

    ``retention()`` answers, when a pass starts, how many seconds rows are kept (``None``: kept
    for ever, the target is skipped); ``delete(cutoff, limit)`` deletes at most ``limit`` rows
    older than ``cutoff`` and answers how many; ``count(cutoff, cap)`` answers how many it would
    delete, counted up to ``cap`` (for ``jobs purge --dry-run``). ``setting`` names the
    ``ULTIMAT3_JOBS`` key the retention is read from (the admin's queues page shows it), ``""``
    when the retention is given in code."""

    name: str
    retention: Callable[[], float | None]
    delete: Callable[[datetime, int], int]
    count: Callable[[datetime, int], int]
    setting: str = ""


@dataclass(frozen=True, slots=True)
class PurgePlan:
    """What one target of a purge would delete now: its retention, its cutoff, how many rows
    (``capped`` when the count stopped at :data:`COUNT_CAP`)."""

    target: str
    retention_seconds: float | None
    cutoff: datetime | None
    rows: int
    capped: bool


@dataclass(frozen=True, slots=True)
class PurgeDeclaration:
    name: str
    targets: tuple[PurgeTarget, ...]
    batch_size: int | None
    max_batches: int
    handle: JobHandle

    def resolved_batch(self) -> int:
        return self.batch_size if self.batch_size is not None else get_settings().purge_batch_size


_declared: Declared[PurgeDeclaration] = Declared("purge", JobDeclarationInvalid)
declared_purges = _declared.all
"""Every declared purge, by name."""
purge_declaration = _declared.get
"""The purge declared under ``name``; :class:`JobDeclarationInvalid` naming the declared ones
when there is none."""


def _refuse(name: str, option: str, rule: str, value: Any) -> JobDeclarationInvalid:
    return JobDeclarationInvalid(f"purge {name!r}: {option} {rule}; got {value!r}")


def _check_targets(name: str, targets: Iterable[PurgeTarget]) -> tuple[PurgeTarget, ...]:
    if isinstance(targets, (str, bytes)) or not isinstance(targets, Iterable):
        raise _refuse(name, "targets", "must be a list of PurgeTarget", targets)
    found = tuple(targets)
    if not found:
        raise _refuse(name, "targets", "must name at least one target", found)
    seen: set[str] = set()
    for target in found:
        if not isinstance(target, PurgeTarget):
            raise _refuse(name, "targets", "must hold PurgeTarget values", target)
        if not re.fullmatch(TARGET_NAME_PATTERN, target.name):
            raise _refuse(name, "target name", f"must match {TARGET_NAME_PATTERN}", target.name)
        if target.name in seen:
            raise _refuse(name, "targets", "must not name a target twice", target.name)
        seen.add(target.name)
    return found


def purge(
    name: str,
    targets: Sequence[PurgeTarget],
    *,
    cron: str | None = None,
    tz: str = "UTC",
    queue: str | None = None,
    batch_size: int | None = None,
    max_batches: int = MAX_BATCHES_DEFAULT,
) -> JobHandle:
    """Declare a purge job named ``name`` over ``targets`` (a target named twice is refused);
    with ``cron``, a cron job the scheduler fires in ``tz``. ``batch_size`` rows per
    delete (``PURGE_BATCH_SIZE`` unless given, at most 10,000), at most ``max_batches`` per
    target and pass. Answers the job's handle; ``handle.enqueue()`` runs a pass now."""
    checked = _check_targets(name, targets)
    if batch_size is not None and not whole_number(batch_size, 1, PURGE_LIMIT_MAX):
        raise _refuse(
            name, "batch_size", f"must be an integer from 1 to {PURGE_LIMIT_MAX}", batch_size
        )
    if not whole_number(max_batches, 1):
        raise _refuse(name, "max_batches", "must be an integer of at least 1", max_batches)

    def body(ctx: JobContext) -> dict[str, int]:
        return run_pass(_declared.get(name), ctx)

    body.__qualname__ = f"purge[{name}]"
    if cron is not None:
        handle = cron_job(cron=cron, tz=tz, name=name, queue=queue, tenant="none")(body)
    else:
        handle = job(name=name, queue=queue, tenant="none")(body)
    _declared.add(name, PurgeDeclaration(name, checked, batch_size, max_batches, handle))
    return handle


def run_pass(declaration: PurgeDeclaration, ctx: JobContext) -> dict[str, int]:
    """One pass: the clock step, then one step per target. Answers rows deleted per target."""
    clock = ctx.step.run("clock", lambda: get_driver().clock_now().isoformat())
    now = datetime.fromisoformat(clock)
    batch = declaration.resolved_batch()
    deleted: dict[str, int] = {}
    for target in declaration.targets:
        sweep = functools.partial(
            _sweep, target, now, batch, declaration.max_batches, ctx.cancelled
        )
        deleted[target.name] = ctx.step.run(f"target:{target.name}", sweep)
    return deleted


def _sweep(
    target: PurgeTarget,
    now: datetime,
    batch: int,
    max_batches: int,
    cancelled: threading.Event,
) -> int:
    """Delete a bounded batch at a time until one comes back short, the pass's batches are
    spent, or the attempt is cancelled."""
    retention = target.retention()
    if retention is None:
        return 0
    cutoff = now - timedelta(seconds=retention)
    total = 0
    for _ in range(max_batches):
        deleted = target.delete(cutoff, batch)
        total += deleted
        if deleted < batch or cancelled.is_set():
            break
    return total


def retention_text(seconds: float | None) -> str:
    """A retention as an operator reads it: ``7d``, ``3600s``, or ``kept`` (for ever)."""
    if seconds is None:
        return "kept"
    if seconds >= 86400 and seconds % 86400 == 0:
        return f"{int(seconds // 86400)}d"
    return f"{seconds:g}s"


def plan(declaration: PurgeDeclaration) -> list[PurgePlan]:
    """What a pass of ``declaration`` would delete now, per target, at one clock reading;
    deletes nothing."""
    now = get_driver().clock_now()
    found: list[PurgePlan] = []
    for target in declaration.targets:
        retention = target.retention()
        if retention is None:
            found.append(PurgePlan(target.name, None, None, 0, False))
            continue
        cutoff = now - timedelta(seconds=retention)
        rows = target.count(cutoff, COUNT_CAP)
        found.append(PurgePlan(target.name, retention, cutoff, rows, rows >= COUNT_CAP))
    return found
