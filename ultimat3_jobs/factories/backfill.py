"""``backfill(name, ...)``: sweep a table in resumable batches, recorded in the ``x_backfills``
ledger.

Layer: factories. A backfill is a job whose body is made of durable steps: ``start`` records the
run in the ledger (refused when a run of the same name and scope completed, or when this
environment is not one the backfill is declared for), then one step per batch, named by its
position (``batch:1``, ``batch:2``, ...), reads a page after the stored cursor, calls
``handle(rows)`` and advances the ledger in one transaction (when the ledger is in that database),
and stores the NEW CURSOR and the row count, never the page. A replayed batch
re-reads its page from the cursor the previous step stored: ``handle`` runs AT LEAST ONCE per
batch. After the last batch, ``count`` (rows still to do) must be 0, else the run fails with
``X_BACKFILL_STALLED``; then ``finish`` records the run ``completed``.
"""

from __future__ import annotations

import functools
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.errors import (
    BackfillCompleted,
    BackfillEnvironment,
    BackfillError,
    BackfillInvalid,
    BackfillStalled,
    JobAborted,
    Terminal,
)
from ultimat3_jobs.factories.declared import Declared
from ultimat3_jobs.factories.sources import Reader, RowsMode, count_of, reader_for
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.model.definitions import JobHandle, job
from ultimat3_jobs.model.job_definition import Retry
from ultimat3_jobs.values import whole_number

BATCH_SIZE_MAX = 10_000
RATE_MAX = 1000.0
ALL_SCOPE = "all"
"""The ledger scope of a backfill over the whole table (``tenant="none"``)."""


@dataclass(frozen=True, slots=True)
class BackfillDeclaration:
    """A declared backfill: where its rows come from, what it does with them, where it may run
    and what must be completed first."""

    name: str
    read: Reader
    handle: Callable[[Any], Any]
    batch_size: int
    rate: float | None
    environments: tuple[str, ...] | None
    requires: tuple[str, ...]
    count: Any
    job: JobHandle
    scope: str = ALL_SCOPE

    def runs_in(self, environment: str) -> bool:
        return self.environments is None or environment in self.environments

    def enqueue(self) -> Any:
        """Start a run now (one live run per name and scope)."""
        key = f"backfill:{self.name}:{self.scope}"
        return self.job.using(idempotency_key=key).enqueue()


_declared: Declared[BackfillDeclaration] = Declared("backfill", BackfillInvalid)
declared_backfills = _declared.all
"""Every declared backfill, by name."""
backfill_declaration = _declared.get
"""The backfill declared under ``name``, or :class:`BackfillInvalid` naming the known."""


def _refuse(name: str, option: str, rule: str, value: Any) -> BackfillInvalid:
    return BackfillInvalid(f"backfill {name!r}: {option} {rule}; got {value!r}")


def _names(name: str, option: str, value: Iterable[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not all(isinstance(v, str) and v for v in value):
        raise _refuse(name, option, "must be a list of names", value)
    return tuple(value)


def backfill(
    name: str,
    *,
    queryset: Any = None,
    pages: Callable[[Any, int], tuple[list[Any], Any]] | None = None,
    handle: Callable[[Any], Any],
    batch_size: int,
    rows: RowsMode = "instances",
    rate: float | None = None,
    environments: Iterable[str] | None = None,
    requires: Iterable[str] = (),
    count: Any = None,
    tenant: str = "none",
    queue: str | None = None,
    retry: Retry | None = None,
) -> JobHandle:
    """Declare a backfill job named ``name``. Exactly one source: ``queryset`` (read by its
    primary key, ascending; the cursor is the last row's key) or ``pages(cursor, limit)``
    answering ``(rows, next_cursor)`` (``next_cursor`` JSON, ``None`` when there is no more).
    ``handle(rows)`` is called AT LEAST ONCE per batch of ``batch_size`` (1 to 10,000) rows:
    ``rows="instances"`` hands it a list of model instances (or the page of ``pages``),
    ``rows="queryset"`` a QuerySet bounded by the batch's key range, its rows never loaded.
    ``rate``: at most that many batches per second, the wait spent inside the batch's step.
    ``environments``: the ``ENVIRONMENT`` names it may run in (any when ``None``);
    ``requires``: backfills that must be completed first (checked at the deploy gate).
    ``count``: a queryset (or a callable answering an int) of rows still to do, which must be
    0 after the last batch. ``tenant`` must be ``"none"`` (one run over the whole table)."""
    if tenant != "none":
        raise _refuse(name, "tenant", 'must be "none" (a backfill sweeps the whole table)', tenant)
    if (queryset is None) == (pages is None):
        raise _refuse(name, "source", "must be exactly one of queryset= or pages=", None)
    if not callable(handle):
        raise _refuse(name, "handle", "must be callable", handle)
    if not whole_number(batch_size, 1, BATCH_SIZE_MAX):
        raise _refuse(
            name, "batch_size", f"must be an integer from 1 to {BATCH_SIZE_MAX}", batch_size
        )
    if rate is not None and (
        isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= RATE_MAX
    ):
        raise _refuse(
            name, "rate", f"must be a number of batches per second, above 0 to {RATE_MAX:g}", rate
        )
    if count is not None and not (callable(count) or hasattr(count, "count")):
        raise _refuse(name, "count", "must be a queryset or a callable answering an int", count)
    read = reader_for(name, queryset=queryset, pages=pages, rows=rows)

    def body(ctx: JobContext) -> dict[str, Any]:
        return run(_declared.get(name), ctx)

    body.__qualname__ = f"backfill[{name}]"
    handle_ = job(
        name=name,
        queue=queue,
        tenant="none",
        retry=retry,
        on_settled=functools.partial(_settled, name),
    )(body)
    declaration = BackfillDeclaration(
        name=name,
        read=read,
        handle=handle,
        batch_size=batch_size,
        rate=None if rate is None else float(rate),
        environments=_names(name, "environments", environments),
        requires=_names(name, "requires", requires) or (),
        count=count,
        job=handle_,
    )
    _declared.add(name, declaration)
    return handle_


def run(declaration: BackfillDeclaration, ctx: JobContext) -> dict[str, Any]:
    """One run: ``start``, the batches, ``count``, ``finish``. A backfill refusal fails the run
    for good (recorded ``failed`` in the ledger); any other error is retried by the job."""
    run_id = ctx.job_id
    driver = get_driver()
    try:
        ctx.step.run("start", functools.partial(_start, declaration, run_id))
        cursor: Any = None
        rows = batches = 0
        while True:
            batch = functools.partial(_batch, declaration, batches + 1, cursor, ctx.cancelled)
            record = functools.partial(driver.backfill_step_put, batch=batches + 1)
            done = ctx.step.run_recorded(f"batch:{batches + 1}", batch, record=record)
            batches += 1
            rows += done["rows"]
            cursor = done["cursor"]
            if done["done"]:
                break
        remaining = ctx.step.run("count", functools.partial(count_of, declaration.count))
        if remaining:
            raise BackfillStalled(
                f"backfill {declaration.name!r}: {remaining} row(s) still to do after its "
                f"last batch (batch {batches}, cursor {cursor!r})"
            )
        ctx.step.run("finish", functools.partial(_finish, run_id))
    except BackfillError as exc:
        get_driver().backfill_finish(run_id=run_id, status="failed", error=str(exc))
        raise Terminal(str(exc)) from exc
    return {"rows": rows, "batches": batches, "cursor": cursor}


def _start(declaration: BackfillDeclaration, run_id: uuid.UUID) -> dict[str, str]:
    environment = get_settings().environment
    if not declaration.runs_in(environment):
        allowed = ", ".join(declaration.environments or ())
        raise BackfillEnvironment(
            f"backfill {declaration.name!r} runs in {allowed}; this is {environment!r} "
            "(ULTIMAT3_JOBS['ENVIRONMENT'])"
        )
    recorded = get_driver().backfill_start(
        name=declaration.name, scope=declaration.scope, run_id=run_id, environment=environment
    )
    if recorded is None:
        raise BackfillCompleted(
            f"backfill {declaration.name!r} ({declaration.scope}) has a completed run: "
            "it is never run again"
        )
    return {"environment": environment}


def _batch(
    declaration: BackfillDeclaration, number: int, cursor: Any, cancelled: threading.Event
) -> dict[str, Any]:
    """One batch: the throttle's wait, the page after ``cursor``, then ``handle``. It runs as
    an atomic step whose record is ``backfill_step_put``: on the job database, ``handle``'s
    writes there, the batch's step (its cursor and count) and the ledger's count of it commit
    in one transaction, one commit per batch, the step and the count written by one
    statement; the transaction opens on the page's read, so the throttle's wait holds none
    open. A ledger elsewhere (Redis, memory): no transaction, the count written before the
    step."""
    if declaration.rate is not None and cancelled.wait(1.0 / declaration.rate):
        raise JobAborted(f"backfill {declaration.name!r} was cancelled during its throttle wait")
    page = declaration.read(cursor, declaration.batch_size)
    if page.count and page.cursor == cursor:
        raise BackfillStalled(
            f"backfill {declaration.name!r}: batch {number} read {page.count} row(s) and its "
            f"cursor did not move from {cursor!r}"
        )
    if page.count:
        declaration.handle(page.rows)
    return {"cursor": page.cursor if page.count else cursor, "rows": page.count, "done": page.done}


def _finish(run_id: uuid.UUID) -> bool:
    return get_driver().backfill_finish(run_id=run_id, status="completed")


def _settled(name: str, ctx: JobContext, ending: str) -> None:
    """A run that ended for good without completing is recorded ``failed`` (its attempts are
    spent); a completed one was recorded by its ``finish`` step."""
    if ending != "completed":
        get_driver().backfill_finish(
            run_id=ctx.job_id, status="failed", error=f"job {name} ended {ending}"
        )
