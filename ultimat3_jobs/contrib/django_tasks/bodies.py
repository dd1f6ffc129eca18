"""The job bodies that run Django tasks on the worker, and the signals they send.
Layer L5 (Django surface); used by :mod:`ultimat3_jobs.contrib.django_tasks.backend`.

Each attempt reads its result, sends ``task_started``, calls the function, then sends
``task_finished`` once the task has ended (it succeeded, or failed for good). For an
``async def`` task the reads and the signals run on asgiref's thread (``sync_to_async``), never on
the event loop, so receivers may use the ORM as they would in a sync task.
"""

from __future__ import annotations

import traceback
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from asgiref.sync import sync_to_async
from django.db import close_old_connections
from django.dispatch import Signal
from django.tasks import Task, TaskResult, TaskResultStatus
from django.tasks.base import TaskContext, TaskError
from django.tasks.signals import task_finished, task_started
from django.utils import timezone
from django.utils.json import normalize_json

from ultimat3_jobs.contrib.django_tasks.json_form import json_form
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.errors import Terminal
from ultimat3_jobs.types import JobRecord


class ResultSource(Protocol):
    """What a body needs of its backend (``JobsBackend``)."""

    def result_from(self, task: Task[Any, Any], record: JobRecord) -> TaskResult[Any, Any]: ...


def sync_body(backend: ResultSource, task: Task[Any, Any]) -> Callable[..., Any]:
    def run_task(
        ctx: Any, *, args: list[Any], kwargs: dict[str, Any], run_after: str | None = None
    ) -> Any:
        result = _start(backend, task, ctx.job_id)
        try:
            value = _json_return(task, task.call(*_call_args(task, result, args), **kwargs))
        except Exception as exc:
            if _record_failure(result, exc, ctx):
                task_finished.send(type(backend), task_result=result)  # inside the except block
            raise
        _succeed(result, value)
        task_finished.send(type(backend), task_result=result)
        return value

    return run_task


def async_body(backend: ResultSource, task: Task[Any, Any]) -> Callable[..., Any]:
    async def run_task(
        ctx: Any, *, args: list[Any], kwargs: dict[str, Any], run_after: str | None = None
    ) -> Any:
        result = await sync_to_async(_start_step)(backend, task, ctx.job_id)
        try:
            value = _json_return(task, await task.acall(*_call_args(task, result, args), **kwargs))
        except Exception as exc:
            if _record_failure(result, exc, ctx):
                await sync_to_async(_send_handling)(task_finished, backend, result, exc)
            raise
        _succeed(result, value)
        await sync_to_async(_send_step)(task_finished, backend, result)
        return value

    return run_task


def _start(backend: ResultSource, task: Task[Any, Any], job_id: uuid.UUID) -> Any:
    """The attempt's result as stored (status RUNNING), once ``task_started`` is sent."""
    record = get_driver().job_get(job_id=job_id)
    if record is None:
        raise Terminal(f"job {job_id} disappeared while starting")
    result = backend.result_from(task, record)
    task_started.send(type(backend), task_result=result)
    return result


def _call_args(task: Task[Any, Any], result: Any, args: list[Any]) -> list[Any]:
    return [TaskContext(task_result=result), *args] if task.takes_context else args


def _json_return(task: Task[Any, Any], value: Any) -> Any:
    try:
        return json_form(normalize_json(value), "return value")
    except (TypeError, ValueError) as exc:
        raise Terminal(
            f"the return value of task {task.module_path} is not JSON ({exc}); return JSON data"
        ) from None


def _succeed(result: Any, value: Any) -> None:
    object.__setattr__(result, "_return_value", value)
    _finish(result, TaskResultStatus.SUCCESSFUL)


def _record_failure(result: Any, exc: Exception, ctx: Any) -> bool:
    """Add the attempt's error to ``result``; answer whether the task failed for good (it raised
    ``Terminal``, or this was its last attempt), which marks it FAILED."""
    kind = type(exc)
    result.errors.append(
        TaskError(
            exception_class_path=f"{kind.__module__}.{kind.__qualname__}",
            traceback="".join(traceback.format_exception(exc)),
        )
    )
    final = isinstance(exc, Terminal) or ctx.attempt >= ctx.max_attempts
    if final:
        _finish(result, TaskResultStatus.FAILED)
    return final


def _finish(result: Any, status: TaskResultStatus) -> None:
    object.__setattr__(result, "status", status)
    object.__setattr__(result, "finished_at", timezone.now())


# -- the steps of an async body that run on asgiref's thread ----------------------------------
# Each one handles the thread's connections as Django does around a request, since nothing else
# closes them on that long-lived thread.


def _start_step(backend: ResultSource, task: Task[Any, Any], job_id: uuid.UUID) -> Any:
    close_old_connections()
    try:
        return _start(backend, task, job_id)
    finally:
        close_old_connections()


def _send_step(signal: Signal, backend: ResultSource, result: Any) -> None:
    close_old_connections()
    try:
        signal.send(type(backend), task_result=result)
    finally:
        close_old_connections()


def _send_handling(signal: Signal, backend: ResultSource, result: Any, exc: Exception) -> None:
    """Send ``signal`` while ``exc`` is being handled on this thread, as Django's receivers
    expect (its logging receiver reads ``sys.exc_info()``); ``exc``'s traceback is kept as the
    function left it."""
    kept = exc.__traceback__
    try:
        raise exc
    except Exception:
        _send_step(signal, backend, result)
    finally:
        exc.__traceback__ = kept
