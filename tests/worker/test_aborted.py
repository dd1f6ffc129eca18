"""A cancelled body's writes are refused: once its attempt is cancelled, ``enqueue`` and
``enqueue_many`` called from the body raise JobAborted (X_ABORTED) and write nothing."""

from __future__ import annotations

import pytest

from tests.testapp import jobs
from tests.testapp.models import Effect
from tests.worker.conftest import wait_for
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.model.context import current_job
from ultimat3_jobs.models import Job
from ultimat3_jobs.operator import verbs


@pytest.fixture(autouse=True)
def _forget_refusals():
    jobs.REFUSED_AFTER_CANCEL.clear()
    yield
    jobs.REFUSED_AFTER_CANCEL.clear()


def refusals(job_id) -> list[str]:
    return [code for seen, code in jobs.REFUSED_AFTER_CANCEL if seen == str(job_id)]


@pytest.mark.parametrize("many", [False, True], ids=["enqueue", "enqueue_many"])
def test_a_body_cancelled_by_an_operator_cannot_enqueue(make_worker, many: bool) -> None:
    result = jobs.enqueues_after_cancel.enqueue(many=many)
    running = make_worker()
    wait_for(lambda: Effect.objects.filter(job_id=result.id).exists(), what="the body started")
    verbs.cancel(PostgresDriver(), result.id, reason="stop it")
    wait_for(lambda: refusals(result.id), what="the body's enqueue was refused")
    wait_for(lambda: not running.worker.running_attempts(), what="the attempt ended")
    assert refusals(result.id) == ["X_ABORTED"]
    assert not Job.objects.filter(name="tests.echo").exists()
    row = Job.objects.get(id=result.id)
    assert (row.state, row.result) == ("cancelled", None)


def test_an_async_body_cancelled_by_an_operator_cannot_enqueue(make_worker) -> None:
    result = jobs.async_enqueues_after_cancel.enqueue(many=True)
    running = make_worker()
    wait_for(lambda: refusals(result.id) == ["started"], what="the body started")
    verbs.cancel(PostgresDriver(), result.id)
    wait_for(lambda: len(refusals(result.id)) == 2, what="the body's enqueue was refused")
    wait_for(lambda: not running.worker.running_attempts(), what="the attempt ended")
    assert refusals(result.id) == ["started", "X_ABORTED"]
    assert not Job.objects.filter(name="tests.echo").exists()


def test_outside_a_body_there_is_no_job_and_enqueue_goes_on(transactional_db) -> None:
    assert current_job() is None
    assert jobs.echo.enqueue(n=1).created
