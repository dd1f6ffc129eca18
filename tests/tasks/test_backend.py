"""The django.tasks backend, pinned to Django's documented contract: enqueue, results,
statuses, errors, worker ids, signals, priority, run_after, async tasks, transactions."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

tasks_framework = pytest.importorskip("django.tasks", reason="django.tasks needs Django 6.0+")

from asgiref.sync import sync_to_async  # noqa: E402
from django.db import connections, transaction  # noqa: E402
from django.tasks import TaskResultStatus, task_backends  # noqa: E402
from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist  # noqa: E402
from django.tasks.signals import task_enqueued, task_finished, task_started  # noqa: E402
from django.utils import timezone  # noqa: E402

from tests.testapp import tasks  # noqa: E402
from tests.worker.conftest import wait_for  # noqa: E402
from ultimat3_jobs.contrib.django_tasks.backend import JobsBackend  # noqa: E402
from ultimat3_jobs.errors import JobInputInvalid  # noqa: E402
from ultimat3_jobs.models import Job  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def signals() -> Iterator[list[tuple[str, Any, str]]]:
    seen: list[tuple[str, Any, str]] = []
    receivers = {}
    for label, signal in (
        ("enqueued", task_enqueued),
        ("started", task_started),
        ("finished", task_finished),
    ):

        def receive(sender: Any, task_result: Any, _label: str = label, **_: Any) -> None:
            seen.append((_label, sender, str(task_result.status)))

        receivers[label] = receive
        signal.connect(receive)
    yield seen
    for label, signal in (
        ("enqueued", task_enqueued),
        ("started", task_started),
        ("finished", task_finished),
    ):
        signal.disconnect(receivers[label])


def finished(result: Any) -> bool:
    result.refresh()
    return result.is_finished


def test_the_backend_declares_what_it_supports() -> None:
    backend = task_backends["default"]
    assert isinstance(backend, JobsBackend)
    assert backend.supports_defer and backend.supports_async_task
    assert backend.supports_get_result and backend.supports_priority


def test_enqueue_answers_a_ready_result_and_sends_task_enqueued(signals) -> None:
    result = tasks.add.enqueue(2, b=3)
    assert result.status == TaskResultStatus.READY
    assert result.args == [2] and result.kwargs == {"b": 3}
    assert result.backend == "default"
    assert signals == [("enqueued", JobsBackend, "READY")]
    job = Job.objects.get(id=result.id)
    assert job.name == "django.tasks:tests.testapp.tasks.add"
    assert job.input == {"args": [2], "kwargs": {"b": 3}}
    fetched = tasks.add.get_result(result.id)
    assert fetched.status == TaskResultStatus.READY and fetched.attempts == 0


def test_a_task_runs_on_the_worker(make_worker, signals) -> None:
    result = tasks.add.enqueue(2, 3)
    make_worker()
    wait_for(lambda: finished(result))
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 5
    assert result.started_at and result.finished_at and result.last_attempted_at
    assert result.enqueued_at is not None
    assert len(result.worker_ids) == 1 and result.attempts == 1
    assert result.errors == []
    assert ("started", JobsBackend, "RUNNING") in signals
    assert ("finished", JobsBackend, "SUCCESSFUL") in signals


def test_priority_and_queue_map_onto_jobs() -> None:
    result = tasks.multiply.using(priority=-40).enqueue(3, 4)
    job = Job.objects.get(id=result.id)
    assert (job.priority, job.queue) == (-40, "math")


def test_run_after_defers_the_job() -> None:
    later = timezone.now() + timedelta(hours=1)
    result = tasks.add.using(run_after=later).enqueue(1, 1)
    assert Job.objects.get(id=result.id).run_at == later


def test_retries_count_attempts_from_one_in_the_context(make_worker) -> None:
    tasks.CONTEXT_ATTEMPTS.clear()
    result = tasks.flaky_with_context.enqueue(fail_until=3)
    make_worker()
    wait_for(lambda: finished(result))
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 3
    assert tasks.CONTEXT_ATTEMPTS == [1, 2, 3]
    assert result.attempts == 3 and len(result.errors) == 2
    assert result.errors[0].exception_class_path == "builtins.RuntimeError"
    assert result.errors[0].exception_class is RuntimeError
    assert "attempt 1 fails" in result.errors[0].traceback


def test_a_failing_task_ends_failed_with_one_error_per_attempt(make_worker, signals) -> None:
    result = tasks.always_fails.enqueue()
    make_worker()
    wait_for(lambda: finished(result))
    assert result.status == TaskResultStatus.FAILED
    assert len(result.errors) == 3 and result.attempts == 3
    assert {e.exception_class_path for e in result.errors} == {"builtins.ValueError"}
    with pytest.raises(ValueError, match="Task failed"):
        _ = result.return_value
    finals = [s for s in signals if s[0] == "finished"]
    assert finals == [("finished", JobsBackend, "FAILED")], "sent once, for the final failure"


def test_a_return_value_that_is_not_json_fails_the_task(make_worker) -> None:
    bad = tasks.returns_a_set.enqueue()
    normalised = tasks.returns_a_tuple.enqueue()
    make_worker()
    wait_for(lambda: finished(bad) and finished(normalised))
    assert bad.status == TaskResultStatus.FAILED
    assert bad.attempts == 1, "not retried: it can never succeed"
    assert "is not JSON" in bad.errors[0].traceback
    assert normalised.return_value == [1, [2, 3]]


def test_async_tasks_run_on_the_worker(make_worker) -> None:
    result = tasks.async_double.enqueue(21)
    make_worker()
    wait_for(lambda: finished(result))
    assert result.return_value == 42


def test_enqueue_follows_the_transactional_rule() -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        rolled_back = tasks.add.enqueue(1, 2)
        raise RuntimeError("roll back")
    with pytest.raises(TaskResultDoesNotExist):
        tasks.add.get_result(rolled_back.id)
    with transaction.atomic():
        kept = tasks.add.enqueue(1, 2)
    assert tasks.add.get_result(kept.id).status == TaskResultStatus.READY


@pytest.mark.parametrize("result_id", ["not-a-uuid", "00000000-0000-0000-0000-000000000000", ""])
def test_unknown_or_malformed_ids_do_not_exist(result_id: str) -> None:
    with pytest.raises(TaskResultDoesNotExist):
        task_backends["default"].get_result(result_id)


def test_a_job_that_is_not_a_task_is_not_a_result() -> None:
    from tests.testapp.jobs import noop

    job = noop.enqueue()
    with pytest.raises(TaskResultDoesNotExist):
        task_backends["default"].get_result(str(job.id))


def test_arguments_json_cannot_carry_are_refused_naming_the_field() -> None:
    with pytest.raises(JobInputInvalid, match=r"input\.args\[0\]\[1\]: builtins\.set is not"):
        tasks.add.enqueue((1, {2}), 3)
    with pytest.raises(JobInputInvalid, match=r"input\.kwargs\.b: two keys become '1'"):
        tasks.add.enqueue(1, b={1: "a", "1": "b"})
    with pytest.raises(JobInputInvalid, match=r"input\.args\[0\]: .* \(tuple\) has no JSON form"):
        tasks.add.enqueue({(1, 2): "a"}, 2)
    assert not Job.objects.exists()


def test_a_queue_outside_queues_is_invalid() -> None:
    with pytest.raises(InvalidTask, match="Queue 'nope'"):
        tasks.add.using(queue_name="nope")


def test_check_passes_when_installed_and_migrated() -> None:
    assert task_backends["default"].check(databases=["default"]) == []


def test_aenqueue_and_aget_result() -> None:
    async def enqueue_and_read() -> Any:
        try:
            result = await tasks.add.aenqueue(4, 5)
            return await tasks.add.aget_result(result.id)
        finally:
            # The sync half ran on asgiref's thread; close the connection it opened there.
            await sync_to_async(connections.close_all, thread_sensitive=True)()

    fetched = asyncio.run(enqueue_and_read())
    assert fetched.status == TaskResultStatus.READY
    assert fetched.args == [4, 5]
