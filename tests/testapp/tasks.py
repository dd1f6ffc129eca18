"""Django Tasks (``django.tasks``) the backend tests enqueue. Imported only on Django 6.0+."""

from __future__ import annotations

from typing import Any

import django
from django.tasks import task
from django.tasks.base import TaskContext

from tests.testapp import tenancy
from ultimat3_jobs.model.context import current_tenant

CONTEXT_ATTEMPTS: list[int] = []


@task
def add(a: int, b: int) -> int:
    return a + b


@task(priority=10, queue_name="math")
def multiply(a: int, b: int) -> int:
    return a * b


@task(takes_context=True)
def flaky_with_context(context: TaskContext, *, fail_until: int) -> int:
    CONTEXT_ATTEMPTS.append(context.attempt)
    if context.attempt < fail_until:
        raise RuntimeError(f"attempt {context.attempt} fails")
    return context.attempt


@task
def always_fails() -> None:
    raise ValueError("never works")


@task
def returns_a_set() -> Any:
    return {1, 2}


@task
def returns_a_tuple() -> Any:
    return (1, [2, 3])


@task
async def async_double(value: int) -> int:
    return value * 2


if django.VERSION >= (6, 1):  # @task(**kwargs) reaches the backend's task class from 6.1 on

    @task(max_attempts=1)
    def fails_once_for_good() -> None:
        raise RuntimeError("one attempt only")


@task
def whose_tenant() -> list[str | None]:
    """The tenancy policy's tenant and ``current_tenant()`` as the task runs."""
    return [tenancy.current(), current_tenant()]
