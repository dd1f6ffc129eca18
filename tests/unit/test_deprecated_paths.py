"""Dotted paths users may have written before the layout of ``model/``, ``runtime/`` and
``contrib/``: each still answers, and warns naming the new path. ``@task`` still declares a cron
job, and warns when used (importing it is silent)."""

from __future__ import annotations

import importlib
import sys
import warnings
from typing import Any

import pytest

from ultimat3_jobs.contrib.django_tasks import JobsBackend
from ultimat3_jobs.model.context import JobContext, current_tenant
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.runtime.worker import Worker, WorkerConfig


def import_fresh(name: str) -> Any:
    sys.modules.pop(name, None)
    return importlib.import_module(name)


def test_the_tasks_backend_path_still_loads_and_warns() -> None:
    with pytest.warns(
        DeprecationWarning, match=r"ultimat3_jobs\.contrib\.django_tasks\.JobsBackend"
    ):
        shim = import_fresh("ultimat3_jobs.tasks")
    assert shim.JobsBackend is JobsBackend


def test_the_context_path_still_answers_and_warns() -> None:
    with pytest.warns(DeprecationWarning, match=r"ultimat3_jobs\.model\.context"):
        shim = import_fresh("ultimat3_jobs.context")
    assert shim.JobContext is JobContext
    assert shim.current_tenant is current_tenant


def test_the_worker_path_still_answers_and_warns() -> None:
    with pytest.warns(DeprecationWarning, match=r"ultimat3_jobs\.runtime\.worker"):
        shim = import_fresh("ultimat3_jobs.worker")
    assert (shim.Worker, shim.WorkerConfig) == (Worker, WorkerConfig)


def test_the_task_decorator_imports_silently_and_warns_when_used() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from ultimat3_jobs import cron, task
    with pytest.warns(DeprecationWarning, match=r"@task is deprecated: use @cron"):
        handle = task(name="tests.deprecated.task", cron="0 3 * * *", tz="UTC", tenant="none")(
            _body
        )
    try:
        assert handle.definition.schedule is not None
        assert handle.definition in registry.crons()
    finally:
        registry.unregister(handle.name)
    assert cron is not task


def _body(ctx: Any) -> None:
    """A cron body at module level."""
