"""Django's Tasks contract, checked from the outside: only the public ``django.tasks`` API
(``@task``, ``enqueue``, ``get_result``, ``TaskResult``, the signals), with the backend named in
``TASKS`` and the tasks run by a real worker."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import django
import pytest

tasks_framework = pytest.importorskip("django.tasks", reason="django.tasks needs Django 6.0+")

from django.tasks import TaskResultStatus  # noqa: E402
from django.tasks.signals import task_enqueued, task_finished, task_started  # noqa: E402
from django.test import override_settings  # noqa: E402
from django.utils import timezone  # noqa: E402

from tests.testapp import contract_tasks, tasks  # noqa: E402
from tests.testapp.models import Effect  # noqa: E402
from tests.worker.conftest import wait_for  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)

# The suite's backend, without the retries its OPTIONS configure.
WITHOUT_RETRY_OPTIONS = {
    "default": {
        "BACKEND": "ultimat3_jobs.contrib.django_tasks.JobsBackend",
        "QUEUES": ["default", "math"],
        "OPTIONS": {"backoff_base_seconds": 0.01, "jitter": 0},
    }
}


def finished(result: Any) -> bool:
    result.refresh()
    return result.is_finished


def run(make_worker: Any, *results: Any) -> None:
    make_worker()
    wait_for(lambda: all(finished(result) for result in results))


@pytest.fixture
def enqueued() -> Iterator[list[Any]]:
    seen: list[Any] = []

    def receive(sender: Any, task_result: Any, **_: Any) -> None:
        seen.append(task_result)

    task_enqueued.connect(receive)
    yield seen
    task_enqueued.disconnect(receive)


# -- arguments and return values are normalised as TaskResult does ---------------------------


def test_arguments_are_normalised_and_come_back_the_same(make_worker) -> None:
    result = contract_tasks.echo.enqueue((1, 2), {3: "c", "d": (4,)}, key={5: [6, (7,)]})
    args = [[1, 2], {"3": "c", "d": [4]}]
    kwargs = {"key": {"5": [6, [7]]}}
    assert (result.args, result.kwargs) == (args, kwargs)
    fetched = contract_tasks.echo.get_result(result.id)
    assert (fetched.args, fetched.kwargs) == (args, kwargs)
    run(make_worker, result)
    assert result.status == TaskResultStatus.SUCCESSFUL, result.errors
    assert result.return_value == {"args": args, "kwargs": kwargs}, "the function saw them too"


def test_keys_take_their_json_form() -> None:
    result = contract_tasks.echo.enqueue({True: 1, None: 2, 2.5: 3, -7: 4})
    assert result.args == [{"true": 1, "null": 2, "2.5": 3, "-7": 4}]
    assert contract_tasks.echo.get_result(result.id).args == result.args


def test_a_return_value_is_normalised(make_worker) -> None:
    result = contract_tasks.keyed.enqueue()
    run(make_worker, result)
    assert result.status == TaskResultStatus.SUCCESSFUL, result.errors
    assert result.return_value == {"1": "one", "2.5": [3, 4], "null": {"true": "yes"}}


@pytest.mark.parametrize(
    "value",
    [{1, 2}, b"bytes", object(), math.nan, {"nested": [math.inf]}, {1: "a", "1": "b"}],
    ids=["set", "bytes", "object", "nan", "inf", "colliding-keys"],
)
def test_values_json_cannot_carry_are_still_refused(value: Any, enqueued) -> None:
    with pytest.raises(ValueError):
        contract_tasks.echo.enqueue(value)
    with pytest.raises(ValueError):
        contract_tasks.echo.enqueue(key=value)
    assert enqueued == []


# -- get_result carries the task as it was enqueued --------------------------------------------


def test_get_result_carries_the_queue_priority_and_run_after_enqueued_with() -> None:
    later = timezone.now() + timedelta(hours=1)
    declared = contract_tasks.deferrable
    assert (declared.queue_name, declared.priority, declared.run_after) == ("math", 0, None)
    result = declared.using(queue_name="default", priority=5, run_after=later).enqueue()
    task = declared.get_result(result.id).task
    assert (task.queue_name, task.priority, task.run_after) == ("default", 5, later)
    assert task.func is declared.func


def test_the_enqueued_task_is_kept_through_retries_and_signals(make_worker) -> None:
    earlier = timezone.now() - timedelta(seconds=1)
    started: list[Any] = []

    def receive(sender: Any, task_result: Any, **_: Any) -> None:
        task = task_result.task
        started.append((task.queue_name, task.priority, task.run_after))

    task_started.connect(receive)
    try:
        tasks.CONTEXT_ATTEMPTS.clear()
        chosen = tasks.flaky_with_context.using(queue_name="math", priority=-3, run_after=earlier)
        result = chosen.enqueue(fail_until=2)
        run(make_worker, result)
    finally:
        task_started.disconnect(receive)
    assert result.status == TaskResultStatus.SUCCESSFUL and result.attempts == 2
    task = tasks.flaky_with_context.get_result(result.id).task
    assert (task.queue_name, task.priority, task.run_after) == ("math", -3, earlier)
    assert started == [("math", -3, earlier)] * 2


# -- signal receivers of async tasks may use the ORM -------------------------------------------


def test_receivers_of_an_async_task_can_use_the_orm(make_worker) -> None:
    seen: list[tuple[str, str, int]] = []

    def receive(sender: Any, task_result: Any, **_: Any) -> None:
        if task_result.task.func is contract_tasks.async_triple.func:
            Effect.objects.create(job_id=task_result.id, attempt=task_result.attempts, worker_pid=0)
            seen.append((sender.__name__, task_result.status, Effect.objects.count()))

    task_started.connect(receive)
    task_finished.connect(receive)
    try:
        result = contract_tasks.async_triple.enqueue(3)
        run(make_worker, result)
    finally:
        task_started.disconnect(receive)
        task_finished.disconnect(receive)
    assert result.status == TaskResultStatus.SUCCESSFUL, result.errors
    assert result.return_value == 9
    assert seen == [("JobsBackend", "RUNNING", 1), ("JobsBackend", "SUCCESSFUL", 2)]


def test_the_failure_of_an_async_task_is_sent_while_it_is_handled(make_worker) -> None:
    seen: list[tuple[str, Any, int]] = []

    def receive(sender: Any, task_result: Any, **_: Any) -> None:
        if task_result.task.func is contract_tasks.async_raises.func:
            handled = sys.exception()
            seen.append((task_result.status, type(handled), Effect.objects.count()))

    task_finished.connect(receive)
    try:
        result = contract_tasks.async_raises.enqueue()
        run(make_worker, result)
    finally:
        task_finished.disconnect(receive)
    assert result.status == TaskResultStatus.FAILED
    assert seen == [("FAILED", ValueError, 0)]
    assert result.errors[-1].exception_class_path == "builtins.ValueError"
    assert "async raises" in result.errors[-1].traceback
    assert "_send_handling" not in result.errors[-1].traceback, "no frame of the signal's send"


# -- a task that raises runs once unless retries are configured --------------------------------


@override_settings(TASKS=WITHOUT_RETRY_OPTIONS)
def test_a_task_that_raises_runs_once_and_is_failed(make_worker) -> None:
    contract_tasks.RUNS.clear()
    result = contract_tasks.raises_every_time.enqueue()
    run(make_worker, result)
    assert result.status == TaskResultStatus.FAILED
    assert result.attempts == 1 and len(result.errors) == 1
    assert contract_tasks.RUNS == ["raises_every_time"]


@pytest.mark.skipif(django.VERSION < (6, 1), reason="@task(**kwargs) arrived in Django 6.1")
@override_settings(TASKS=WITHOUT_RETRY_OPTIONS)
def test_retries_configured_on_the_task_apply(make_worker) -> None:
    contract_tasks.RUNS.clear()
    result = contract_tasks.raises_with_two_attempts.enqueue()
    run(make_worker, result)
    assert result.status == TaskResultStatus.FAILED
    assert result.attempts == 2 and len(result.errors) == 2
    assert contract_tasks.RUNS == ["raises_with_two_attempts"] * 2


def test_retries_configured_in_options_apply(make_worker) -> None:
    # The suite's TASKS sets OPTIONS["max_attempts"] to 3.
    contract_tasks.RUNS.clear()
    result = contract_tasks.raises_every_time.enqueue()
    run(make_worker, result)
    assert result.status == TaskResultStatus.FAILED
    assert result.attempts == 3
    assert contract_tasks.RUNS == ["raises_every_time"] * 3
