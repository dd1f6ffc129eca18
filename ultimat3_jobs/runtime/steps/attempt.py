"""An attempt's durable steps: bound to the store when the attempt starts, unwound when it
fails for good.

Compensation (the saga rule) runs only for a job that failed for good: never for a retry, a
cancel, a lost lease or a suspension. The compensations of the done steps the last run reached
run newest first, on the body's thread (or event loop), each recorded ``compensated`` so that a
crash in the middle of the unwind repeats none of them. A compensation that raises fails the job
at once with that error, the body's own error kept in its message.
"""

from __future__ import annotations

import uuid
from functools import partial
from typing import Protocol

from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.errors import EnqueueRefused, JobUnknown, StepError, Terminal
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.model.definitions import JobDefinition
from ultimat3_jobs.model.policy import after_failure
from ultimat3_jobs.model.step_api import AsyncSteps, Steps
from ultimat3_jobs.model.steps import StepState, StepWriter
from ultimat3_jobs.runtime.steps.writer import writer_for
from ultimat3_jobs.types import ClaimedJob


class Attempt(Protocol):
    """What the unwind reads of the worker's attempt."""

    job: ClaimedJob
    definition: JobDefinition | None
    ctx: JobContext
    timed_out: bool
    lost: bool


def is_terminal(exc: BaseException) -> bool:
    """Whether a body's error fails its job at once: ``Terminal``, refused input and step
    refusals (a replay would meet them again); a job this process does not declare is retried
    (a newer deploy may declare it)."""
    return isinstance(exc, (Terminal, EnqueueRefused, StepError)) and not isinstance(
        exc, JobUnknown
    )


def bind_steps(
    ctx: JobContext,
    *,
    driver: JobDriver,
    claim_token: uuid.UUID,
    is_async: bool,
    writer: StepWriter | None = None,
) -> None:
    """Give ``ctx`` its ``step`` API, storing through ``driver`` under ``claim_token``: built
    when the body first reads ``ctx.step`` (a body without steps, most of them, never pays for
    its state, about a tenth of a no-op job's worker CPU)."""
    ctx._step = None
    ctx._bind_step = partial(_steps, driver, claim_token, is_async, writer)


def _steps(
    driver: JobDriver,
    claim_token: uuid.UUID,
    is_async: bool,
    writer: StepWriter | None,
    ctx: JobContext,
) -> Steps | AsyncSteps:
    state = StepState(
        driver=driver,
        job_id=ctx.job_id,
        claim_token=claim_token,
        job_name=ctx.name,
        writer=writer if writer is not None else writer_for(driver),
        cancelled=ctx.cancelled,
    )
    return AsyncSteps(state) if is_async else Steps(state)


def _fails_for_good(attempt: Attempt, exc: BaseException) -> bool:
    if attempt.lost or attempt.timed_out or attempt.ctx.cancelled.is_set():
        return False
    decision = after_failure(
        attempt.definition,
        attempt=attempt.job.attempt,
        max_attempts=attempt.job.max_attempts,
        terminal=is_terminal(exc),
    )
    return decision.action != "retry"


def _compensation_failed(exc: BaseException, failed: Exception) -> Terminal:
    error = Terminal(
        f"a compensation raised {type(failed).__qualname__}: {failed}; the job had failed "
        f"with {type(exc).__qualname__}: {exc}"
    )
    error.__cause__ = failed
    return error


def _to_unwind[S: (Steps, AsyncSteps)](
    attempt: Attempt, exc: BaseException, kind: type[S]
) -> S | None:
    """The body's steps when ``exc`` fails its job for good and some done step has a
    compensation to run; ``None`` when there is nothing to unwind."""
    steps = attempt.ctx.step
    if not isinstance(steps, kind) or not steps.compensations:
        return None
    return steps if _fails_for_good(attempt, exc) else None


def unwound(attempt: Attempt, exc: BaseException) -> BaseException:
    """Unwind a sync body's steps when ``exc`` fails its job for good; answers the error the
    attempt fails with."""
    steps = _to_unwind(attempt, exc, Steps)
    if steps is None:
        return exc
    try:
        steps.unwind()
    except Exception as failed:
        return _compensation_failed(exc, failed)
    return exc


async def aunwound(attempt: Attempt, exc: BaseException) -> BaseException:
    """:func:`unwound` for an ``async def`` body."""
    steps = _to_unwind(attempt, exc, AsyncSteps)
    if steps is None:
        return exc
    try:
        await steps.unwind()
    except Exception as failed:
        return _compensation_failed(exc, failed)
    return exc
