"""Run one attempt's body and say how it ended. Never raises: every ending is an Outcome."""

from __future__ import annotations

import asyncio
import inspect
import traceback
from collections.abc import Callable
from functools import partial
from typing import Any

from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.errors import JobInputInvalid, JobUnknown
from ultimat3_jobs.model.requests import check_input_signature
from ultimat3_jobs.model.steps import StepSuspended
from ultimat3_jobs.model.tenancy import TenantScope
from ultimat3_jobs.runtime.common.pool import close_old_thread_connections
from ultimat3_jobs.runtime.steps.attempt import aunwound, is_terminal, unwound
from ultimat3_jobs.runtime.worker.attempt import Attempt, Outcome, new_outcome
from ultimat3_jobs.serialization import none_json
from ultimat3_jobs.types import AttemptError

ERROR_MESSAGE_LIMIT = 2000
TRACEBACK_LIMIT = 20_000


class JobTimedOut(Exception):
    """The attempt ran past its job's timeout."""


def storable(text: str) -> str:
    """Text PostgreSQL's jsonb can hold: NUL and lone surrogates (which an exception's message
    may carry) are replaced, never allowed to stall the settle."""
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def attempt_error(attempt: Attempt, exc: BaseException, *, worker_id: str) -> AttemptError:
    kind = type(exc)
    text = "".join(traceback.format_exception(exc))
    return AttemptError(
        attempt=attempt.job.attempt,
        error_class=f"{kind.__module__}.{kind.__qualname__}",
        message=storable(str(exc))[:ERROR_MESSAGE_LIMIT],
        traceback=storable(text)[-TRACEBACK_LIMIT:],
        worker_id=worker_id,
    )


def prepare(attempt: Attempt) -> BaseException | None:
    """Refusals decided before the body runs: an undeclared job, input that no longer fits the
    body's signature. Answers the error, or None to go ahead."""
    definition = attempt.definition
    if definition is None:
        return JobUnknown(
            f"job {attempt.job.name!r} is not declared in this worker process",
            field="name",
            rule="declared-job",
        )
    if not isinstance(attempt.job.input, dict):
        return JobInputInvalid("stored input is not an object", field="input", rule="mapping")
    try:
        check_input_signature(definition, attempt.job.input)
    except JobInputInvalid as exc:
        return exc
    return None


def finish(attempt: Attempt, result: Any, *, worker_id: str) -> Outcome:
    """The outcome of a body that returned ``result``."""
    if attempt.timed_out:
        return failure(attempt, JobTimedOut(_timeout_message(attempt)), worker_id=worker_id)
    settings = get_settings()
    if result is None and (text := none_json(settings.input_max_bytes)) is not None:
        return new_outcome(attempt, "completed", result_json=text)  # most: no encoder
    try:
        result_json = settings.encode_stored(result, root="return value")
    except JobInputInvalid as exc:
        return Outcome(
            attempt,
            "failed",
            error=attempt_error(attempt, exc, worker_id=worker_id),
            terminal=True,
        )
    return new_outcome(attempt, "completed", result_json=result_json)


def failure(attempt: Attempt, exc: BaseException, *, worker_id: str) -> Outcome:
    """The outcome of a body that raised ``exc``: Terminal and refused input fail at once."""
    if attempt.timed_out and not isinstance(exc, JobTimedOut):
        exc = JobTimedOut(_timeout_message(attempt))
    # A job this process does not declare may be declared by a newer deploy: retried like any
    # failure (and dead-lettered once its attempts are spent), never failed on sight.
    terminal = is_terminal(exc)
    return Outcome(
        attempt, "failed", error=attempt_error(attempt, exc, worker_id=worker_id), terminal=terminal
    )


def _timeout_message(attempt: Attempt) -> str:
    timeout = attempt.definition.timeout_seconds if attempt.definition else None
    return f"job {attempt.job.name!r} ran past its timeout of {timeout:g} s"


def not_begun(attempt: Attempt, *, worker_id: str) -> Outcome:
    """The outcome of an attempt that ended before its body could start: it timed out while
    waiting (a failure), or it was cancelled, lost or settled already (the worker drops it)."""
    if attempt.timed_out and not attempt.lost:
        return failure(attempt, JobTimedOut(_timeout_message(attempt)), worker_id=worker_id)
    return Outcome(attempt, "lost")


def call_sync(attempt: Attempt, *, worker_id: str) -> tuple[Outcome | None, Any]:
    """Call a prepared sync body in its scope: ``(outcome, None)`` when it raised or was
    suspended (or the tenant hook raised), ``(None, result)`` when it returned (its outcome is
    :func:`finish`'s)."""
    assert attempt.definition is not None
    try:
        with TenantScope(attempt.ctx.tenant_id, None, attempt.ctx):  # no keyword: no dict
            try:
                result = attempt.definition.fn(attempt.ctx, **attempt.job.input)
                if result is not None and inspect.isawaitable(result):
                    close = getattr(result, "close", None)
                    if close is not None:
                        close()
                    raise TypeError("the job body returned an awaitable; declare it with async def")
            except StepSuspended:  # durable steps: the job is suspended, the attempt given back
                return Outcome(attempt, "suspended"), None
            except Exception as exc:
                return failure(attempt, unwound(attempt, exc), worker_id=worker_id), None
    except Exception as exc:  # the TENANT_CONTEXT hook raised as it was entered or left
        return failure(attempt, exc, worker_id=worker_id), None
    return None, result


def run_sync(attempt: Attempt, worker_id: str, begun: bool | None = None) -> Outcome:
    """Run a sync body on the calling (pool) thread, in the run's tenant scope and with the
    thread's database connections checked after it, as Django checks them after a request.
    ``begun``: :meth:`Attempt.begin`'s answer when the caller asked it already."""
    if not (attempt.begin() if begun is None else begun):
        return not_begun(attempt, worker_id=worker_id)
    refused = prepare(attempt)
    if refused is not None:
        return failure(attempt, refused, worker_id=worker_id)
    try:
        ended, result = call_sync(attempt, worker_id=worker_id)
    finally:
        # Once per attempt, after the body, as Django does after a request: a connection the
        # body left broken, in a transaction or past its age is closed before this thread runs
        # anything else, so the next body on it starts with a sound one (a connection that
        # only aged while the thread was idle is closed after that next body).
        close_old_thread_connections()
    return ended if ended is not None else finish(attempt, result, worker_id=worker_id)


def task_cancel() -> Callable[[], object] | None:
    """What cancels the running asyncio task from another thread (``None``: no task)."""
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    return None if task is None else partial(loop.call_soon_threadsafe, task.cancel)


async def run_async(attempt: Attempt, *, worker_id: str, begun: bool | None = None) -> Outcome:
    """Run an ``async def`` body on the worker's event loop. Timing out or losing the attempt
    cancels its task: the body gets ``CancelledError`` at the ``await`` it is in. ``begun``:
    :meth:`Attempt.begin`'s answer (with :func:`task_cancel`) when the caller asked it."""
    if not (attempt.begin(cancel=task_cancel()) if begun is None else begun):
        return not_begun(attempt, worker_id=worker_id)
    refused = prepare(attempt)
    if refused is not None:
        return failure(attempt, refused, worker_id=worker_id)
    assert attempt.definition is not None
    try:
        with TenantScope(attempt.ctx.tenant_id, job=attempt.ctx):
            try:
                result = await attempt.definition.fn(attempt.ctx, **attempt.job.input)
            except StepSuspended:  # durable steps: the job is suspended, the attempt given back
                return Outcome(attempt, "suspended")
            except Exception as exc:
                return failure(attempt, await aunwound(attempt, exc), worker_id=worker_id)
    except Exception as exc:  # the TENANT_CONTEXT hook raised as it was entered or left
        return failure(attempt, exc, worker_id=worker_id)
    return finish(attempt, result, worker_id=worker_id)
