"""``JobsBackend``: Django's Tasks framework (``django.tasks``, Django 6.0+) on ultimat3-jobs.

Configure it in ``settings.TASKS``; any ``@task`` function then runs on ``manage.py jobs_worker``
with retries, backoff, dead letters, crash safety and the admin::

    TASKS = {"default": {"BACKEND": "ultimat3_jobs.contrib.django_tasks.JobsBackend",
                         "QUEUES": ["default"],
                         "OPTIONS": {"max_attempts": 5}}}

Each task becomes a job named ``django.tasks:<module path>``; its input is
``{"args": [...], "kwargs": {...}}`` in the JSON form Django's ``TaskResult`` gives them (tuples
become lists, keys strings; what JSON cannot carry is refused), plus ``"run_after"`` when the
task was deferred. A task runs once unless retries are configured. Layer L5 (Django surface).
"""

from __future__ import annotations

import importlib
import inspect
import re
import uuid
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from django.apps import apps
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, connections
from django.utils import timezone

try:
    from django.tasks import Task, TaskResult, TaskResultStatus
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import TaskError
    from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist
    from django.tasks.signals import task_enqueued
except ImportError as exc:  # Django 5.2: no Tasks framework
    raise ImproperlyConfigured(
        "ultimat3_jobs.contrib.django_tasks.JobsBackend needs Django's Tasks framework "
        "(django.tasks), which "
        "arrived in Django 6.0; upgrade Django or enqueue with ultimat3_jobs' @job directly"
    ) from exc

from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.contrib.django_tasks.bodies import async_body, sync_body
from ultimat3_jobs.contrib.django_tasks.json_form import json_form
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.errors import EnqueueRefused, JobDeclarationInvalid
from ultimat3_jobs.model.definitions import JobHandle
from ultimat3_jobs.model.enqueue import enqueue
from ultimat3_jobs.model.job_definition import JobDefinition, Retry, check_declaration
from ultimat3_jobs.model.options import EnqueueOptions
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.types import JOB_NAME_PATTERN, QUEUE_NAME_PATTERN, JobRecord, JobState

JOB_PREFIX = "django.tasks:"
RETRY_OPTIONS = ("max_attempts", "backoff_base_seconds", "backoff_cap_seconds", "jitter")

_STATUS = {
    JobState.QUEUED: TaskResultStatus.READY,
    JobState.RUNNING: TaskResultStatus.RUNNING,
    JobState.COMPLETED: TaskResultStatus.SUCCESSFUL,
    JobState.FAILED: TaskResultStatus.FAILED,
    JobState.CANCELLED: TaskResultStatus.FAILED,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class JobsTask(Task):  # type: ignore[type-arg]  # generic in the stubs only
    """A Task with ultimat3-jobs' retry options. With Django 6.1, ``@task(max_attempts=5)``
    reaches these fields; ``None`` takes the backend's ``OPTIONS``, then the settings (for
    ``max_attempts``: 1, so a task that raises runs once, as Django describes)."""

    max_attempts: int | None = None
    backoff_base_seconds: float | None = None
    backoff_cap_seconds: float | None = None
    jitter: float | None = None
    timeout: float | None = None


def job_name(task: Task[Any, Any]) -> str:
    return f"{JOB_PREFIX}{task.module_path}"


class JobsBackend(BaseTaskBackend):
    """Runs Django Tasks as ultimat3-jobs jobs."""

    task_class = JobsTask
    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        unknown = set(self.options) - {*RETRY_OPTIONS, "timeout", "dead_letter"}
        if unknown:
            raise ImproperlyConfigured(
                f"TASKS[{alias!r}]['OPTIONS'] has unknown keys {sorted(unknown)}; known: "
                f"{', '.join((*RETRY_OPTIONS, 'timeout', 'dead_letter'))}"
            )

    # -- validation ------------------------------------------------------------------------

    def validate_task(self, task: Task[Any, Any]) -> None:
        super().validate_task(task)
        if not re.fullmatch(JOB_NAME_PATTERN, job_name(task)):
            raise InvalidTask(
                f"Task path {task.module_path!r} is too long or has characters a job name "
                f"cannot hold ({JOB_NAME_PATTERN})."
            )
        if not re.fullmatch(QUEUE_NAME_PATTERN, task.queue_name):
            raise InvalidTask(
                f"Queue {task.queue_name!r} is not a queue name ({QUEUE_NAME_PATTERN})."
            )
        try:
            self.definition(task)
        except (EnqueueRefused, JobDeclarationInvalid) as exc:
            raise InvalidTask(exc.message) from None
        except ValueError as exc:
            raise InvalidTask(str(exc)) from None

    def definition(self, task: Task[Any, Any]) -> JobDefinition:
        """The job a task runs as: its retry options from the task, else ``OPTIONS``."""

        def option(key: str) -> Any:
            value = getattr(task, key, None)
            return value if value is not None else self.options.get(key)

        # Django's contract: a task that raises is FAILED after one run, unless retries are asked.
        attempts = option("max_attempts")
        retry = Retry(
            attempts=1 if attempts is None else attempts,
            backoff_base_seconds=option("backoff_base_seconds"),
            backoff_cap_seconds=option("backoff_cap_seconds"),
            jitter=option("jitter"),
        )
        name = job_name(task)
        retry.check(name)
        body = async_body(self, task) if inspect.iscoroutinefunction(task.func) else None
        definition = JobDefinition(
            name=name,
            fn=body or sync_body(self, task),
            queue=task.queue_name,
            priority=task.priority,
            retry=retry,
            timeout_seconds=option("timeout"),
            tenant="none",
            dead_letter=bool(self.options.get("dead_letter", True)),
            is_async=body is not None,
            signature=inspect.signature(sync_body(self, task)),
        )
        check_declaration(definition)
        return definition

    # -- enqueue and results -----------------------------------------------------------------

    def enqueue(self, task: Task[Any, Any], args: Any, kwargs: Any) -> TaskResult[Any, Any]:
        self.validate_task(task)
        options = EnqueueOptions(
            run_at=task.run_after, priority=task.priority, queue=task.queue_name
        )
        args = json_form(list(args), "input.args")
        kwargs = json_form(dict(kwargs), "input.kwargs")
        stored = {"args": args, "kwargs": kwargs}
        if task.run_after is not None:
            stored["run_after"] = task.run_after.isoformat()
        result = enqueue(self.definition(task), stored, options)
        task_result: TaskResult[Any, Any] = TaskResult(
            task=task,
            id=str(result.id),
            status=TaskResultStatus.READY,
            enqueued_at=timezone.now(),
            started_at=None,
            last_attempted_at=None,
            finished_at=None,
            args=args,
            kwargs=kwargs,
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        task_enqueued.send(type(self), task_result=task_result)
        return task_result

    def get_result(self, result_id: str) -> TaskResult[Any, Any]:
        try:
            job_id = uuid.UUID(str(result_id))
        except ValueError:
            raise TaskResultDoesNotExist(result_id) from None
        record = get_driver().job_get(job_id=job_id)
        if record is None or not record.name.startswith(JOB_PREFIX):
            raise TaskResultDoesNotExist(result_id)
        handle = _resolve(record.name)
        task = getattr(handle, "task", None) if handle is not None else None
        if task is None:
            raise TaskResultDoesNotExist(result_id)
        return self.result_from(task, record)

    def result_from(self, task: Task[Any, Any], record: JobRecord) -> TaskResult[Any, Any]:
        """A TaskResult from a stored job: the task as it was enqueued, one error and one worker
        id per attempt."""
        errors = record.errors or []
        worker_ids = [str(e.get("worker_id") or "") for e in errors]
        if record.state in (JobState.RUNNING, JobState.COMPLETED) and record.worker_id:
            worker_ids.append(record.worker_id)
        stored = record.input if isinstance(record.input, dict) else {}
        result: TaskResult[Any, Any] = TaskResult(
            task=_as_enqueued(task, record, stored.get("run_after")),
            id=str(record.id),
            status=_STATUS[record.state],
            enqueued_at=record.created_at,
            started_at=record.started_at,
            last_attempted_at=record.started_at,
            finished_at=record.finished_at,
            args=list(stored.get("args", [])),
            kwargs=dict(stored.get("kwargs", {})),
            backend=self.alias,
            errors=[
                TaskError(
                    exception_class_path=str(e.get("error_class", "builtins.Exception")),
                    traceback=str(e.get("traceback", "")),
                )
                for e in errors
            ],
            worker_ids=worker_ids,
        )
        if record.state == JobState.COMPLETED:
            object.__setattr__(result, "_return_value", record.result)
        return result

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        messages: list[checks.CheckMessage] = []
        if not apps.is_installed("ultimat3_jobs"):
            messages.append(
                checks.Error(
                    f"TASKS[{self.alias!r}] uses "
                    "ultimat3_jobs.contrib.django_tasks.JobsBackend, but "
                    "'ultimat3_jobs' is not in INSTALLED_APPS.",
                    id="ultimat3_jobs.E050",
                )
            )
            return messages
        try:
            alias = get_settings().database
        except ImproperlyConfigured:
            return messages  # the ULTIMAT3_JOBS checks report the settings themselves
        if alias in (kwargs.get("databases") or []):
            try:
                with connections[alias].cursor() as cursor:
                    tables = connections[alias].introspection.table_names(cursor)
            except DatabaseError as exc:
                tables = []
                reason = f"the database could not be read ({exc})"
            else:
                reason = "x_jobs does not exist"
            if "x_jobs" not in tables:
                messages.append(
                    checks.Error(
                        f"TASKS[{self.alias!r}]: ultimat3_jobs is not migrated on database "
                        f"{alias!r}: {reason}. Run manage.py migrate.",
                        id="ultimat3_jobs.E051",
                    )
                )
        return messages


def _as_enqueued(task: Task[Any, Any], record: JobRecord, run_after: Any) -> Task[Any, Any]:
    """``task`` with the queue, priority and ``run_after`` its job was enqueued with. Built
    without ``Task.using()``, whose validation would refuse a stored job whose queue has since
    left ``QUEUES`` (and which cannot clear ``run_after``)."""
    changes = {
        "queue_name": record.queue,
        "priority": record.priority,
        "run_after": _stored_datetime(run_after),
    }
    if all(getattr(task, key) == value for key, value in changes.items()):
        return task
    enqueued = object.__new__(type(task))
    for field in fields(task):
        value = changes.get(field.name, getattr(task, field.name))
        object.__setattr__(enqueued, field.name, value)
    return enqueued


def _stored_datetime(value: Any) -> datetime | None:
    """The ``run_after`` an input holds; ``None`` for a job stored without one (enqueued with
    no ``run_after``, or by an earlier version) or with one that is not ISO 8601."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _resolve(name: str) -> JobHandle | None:
    """The job of a stored ``django.tasks:`` name. Only a module inside an installed app is
    imported, and only a Task of a JobsBackend is accepted: a stored name never makes the worker
    import arbitrary code."""
    path = name.removeprefix(JOB_PREFIX)
    module_name, _, attribute = path.rpartition(".")
    if not module_name or apps.get_containing_app_config(module_name) is None:
        return None
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    task = getattr(module, attribute, None)
    if not isinstance(task, Task) or task.module_path != path:
        return None
    backend = task.get_backend()
    if not isinstance(backend, JobsBackend):
        return None
    handle = JobHandle(backend.definition(task))
    handle.task = task  # type: ignore[attr-defined]
    return handle


# Registered on import: the app's ready() imports this module whenever TASKS names the backend,
# so a worker resolves task jobs without the project importing its task modules first.
registry.add_resolver(JOB_PREFIX, _resolve)
