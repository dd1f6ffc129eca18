"""The audit the process tests rely on finds each kind of damage it claims to find.

No subprocess here: the rows are written through the driver, as a worker would write them."""

from __future__ import annotations

import uuid

import pytest
from django.db.models import F

from tests.process.audit import audit, enqueue
from tests.testapp.models import Effect
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.models import JobCounter
from ultimat3_jobs.types import AckItem

pytestmark = pytest.mark.django_db


def _effect(job_id: uuid.UUID, attempt: int) -> None:
    Effect.objects.create(job_id=job_id, attempt=attempt, worker_pid=1, label="audit")


def test_a_clean_run_has_no_problems() -> None:
    ids = enqueue("tests.record", [{"n": n} for n in range(3)])
    driver = PostgresDriver()
    claimed = driver.job_claim(queues=["default"], limit=3, worker_id="w", lease_seconds=60)
    for job in claimed:
        _effect(job.id, job.attempt)
    items = [
        AckItem(job_id=job.id, claim_token=job.claim_token, result_json='{"n": 0, "attempt": 1}')
        for job in claimed
    ]
    assert driver.job_ack_many(items=items) == set(ids)
    report = audit("tests.record", ids)
    assert report.problems() == []
    assert (report.completed, report.counter_completed, report.lost) == (3, 3, 0)


def test_the_audit_reports_lost_running_repeated_and_double_counted_jobs() -> None:
    ids = enqueue("tests.record", [{"n": n} for n in range(4)])
    driver = PostgresDriver()
    good, repeated, running = driver.job_claim(
        queues=["default"], limit=3, worker_id="w", lease_seconds=60
    )
    _effect(good.id, 1)
    _effect(repeated.id, 1)
    _effect(repeated.id, 1)  # the body of attempt 1 ran twice
    driver.job_ack_many(
        items=[
            AckItem(job_id=good.id, claim_token=good.claim_token, result_json='{"attempt": 1}'),
            AckItem(
                job_id=repeated.id, claim_token=repeated.claim_token, result_json='{"attempt": 2}'
            ),  # not its attempt
        ]
    )
    JobCounter.objects.filter(name="tests.record").update(completed=F("completed") + 1)

    report = audit("tests.record", ids)
    assert report.lost == 2  # one still running, one never claimed
    assert report.by_state == {"completed": 2, "running": 1, "queued": 1}
    assert report.counter_completed == 3
    assert report.effect_attempt_repeated == [(repeated.id, 1)]
    assert [job_id for job_id, _, _ in report.result_attempt_mismatch] == [repeated.id]
    problems = " | ".join(report.problems())
    for expected in ("2 lost", "counter 3 != 2", "1 still running", "repeat an attempt"):
        assert expected in problems
    assert running.id not in [job_id for job_id, _ in report.effect_attempt_repeated]


def test_a_completed_job_without_the_effect_of_its_attempt_is_reported() -> None:
    [job_id] = enqueue("tests.record", [{"n": 1}])
    driver = PostgresDriver()
    [job] = driver.job_claim(queues=["default"], limit=1, worker_id="w", lease_seconds=60)
    driver.job_ack_many(
        items=[AckItem(job_id=job.id, claim_token=job.claim_token, result_json='{"attempt": 1}')]
    )
    report = audit("tests.record", [job_id])
    assert report.completed_without_effect == [job_id]
