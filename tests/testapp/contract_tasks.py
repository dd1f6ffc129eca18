"""Django Tasks the contract tests (``tests/tasks/test_contract.py``) enqueue. Imported only on
Django 6.0+. They live in an installed app so that the worker finds them."""

from __future__ import annotations

from typing import Any

import django
from django.tasks import task

RUNS: list[str] = []


@task
def echo(*args: Any, **kwargs: Any) -> Any:
    """Answers its arguments as the function received them."""
    return {"args": args, "kwargs": kwargs}


@task
def keyed() -> Any:
    return {1: "one", 2.5: (3, 4), None: {True: "yes"}}


@task(queue_name="math")
def deferrable() -> str:
    return "ran"


@task
def raises_every_time() -> None:
    RUNS.append("raises_every_time")
    raise ValueError("raises every time")


@task
async def async_triple(value: int) -> int:
    return value * 3


@task
async def async_raises() -> None:
    raise ValueError("async raises")


if django.VERSION >= (6, 1):  # @task(**kwargs) reaches the backend's task class from 6.1 on

    @task(max_attempts=2)
    def raises_with_two_attempts() -> None:
        RUNS.append("raises_with_two_attempts")
        raise ValueError("raises with two attempts")
