"""travel (delayed jobs become due) and fire_cron (what the scheduler enqueues at an instant)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from tests.testing import jobs
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.testing import Jobs, enqueued_jobs, fire_cron, run_enqueued, travel

PARIS = ZoneInfo("Europe/Paris")


@pytest.fixture(autouse=True)
def cron_tasks() -> Iterator[None]:
    for handle in jobs.CRON_TASKS:
        registry.register(handle)
    yield
    for handle in jobs.CRON_TASKS:
        registry.unregister(handle.name)


def test_travel_is_cumulative_and_answers_the_jobs_that_became_due(driver: JobDriver) -> None:
    soon = jobs.other.using(delay=30).enqueue(n=1)
    later = jobs.other.using(delay=90).enqueue(n=2)
    before = {job.id: job.run_at for job in enqueued_jobs()}

    assert travel(timedelta(seconds=45)) == [soon.id]
    assert run_enqueued().completed == (soon.id,)
    moved = enqueued_jobs()[0]
    assert moved.id == later.id
    assert before[later.id] - moved.run_at == timedelta(seconds=45)
    assert travel(30) == []
    assert travel(30) == [later.id]
    assert run_enqueued().completed == (later.id,)


def test_travel_leaves_due_jobs_in_place(driver: JobDriver) -> None:
    due = jobs.other.enqueue(n=1)
    run_at = enqueued_jobs()[0].run_at
    assert travel(60) == []
    assert [(job.id, job.run_at) for job in enqueued_jobs()] == [(due.id, run_at)]


def test_travel_refuses_going_back_or_a_bad_amount(driver: JobDriver) -> None:
    with pytest.raises(ValueError, match="forward only"):
        travel(-1)
    with pytest.raises(TypeError, match="seconds or a timedelta"):
        travel("1h")  # type: ignore[arg-type]


def test_fire_cron_enqueues_a_task_at_its_occurrence(driver: JobDriver) -> None:
    at = datetime(2026, 3, 10, 3, 0, tzinfo=PARIS)

    fired = fire_cron(at, job=jobs.nightly)

    assert [(f.name, f.occurrence, f.status) for f in fired] == [("testing.nightly", at, "created")]
    queued = enqueued_jobs(jobs.nightly)
    assert [job.id for job in queued] == [fired[0].job_id]
    expected_key = f"task:{int(at.timestamp())}:testing.nightly"
    assert queued[0].idempotency_key == expected_key
    # The scheduler's key makes a second fire of one occurrence a no-op.
    assert [f.status for f in fire_cron(at, job="testing.nightly")] == ["deduped"]
    run_enqueued()
    assert ("testing.nightly", None) in jobs.CALLS


def test_fire_cron_fires_nothing_between_occurrences(driver: JobDriver) -> None:
    assert fire_cron(datetime(2026, 3, 10, 3, 1, tzinfo=PARIS), job=jobs.nightly) == []
    assert fire_cron(datetime(2026, 3, 10, 2, 0, 30, tzinfo=UTC), job=jobs.hourly) == []


def test_fire_cron_without_a_task_fires_every_task_due_then(driver: JobDriver) -> None:
    at = datetime(2026, 3, 10, 2, 0, tzinfo=UTC)  # 03:00 in Paris, and a whole hour
    names = {f.name for f in fire_cron(at)}
    assert {"testing.nightly", "testing.hourly"} <= names


def test_fire_cron_since_applies_the_catch_up_policy(driver: JobDriver) -> None:
    since = datetime(2026, 3, 10, 0, 0, tzinfo=UTC)
    at = since + timedelta(hours=3)

    # catch_up="all": every hour missed fires; "run-once": one job for everything missed.
    hourly = fire_cron(at, job=jobs.hourly, since=since)
    assert [f.occurrence for f in hourly] == [since + timedelta(hours=h) for h in (1, 2, 3)]
    assert len(enqueued_jobs(jobs.hourly)) == 3
    days = fire_cron(at + timedelta(days=3), job=jobs.nightly, since=since)
    assert len(days) == 1
    assert days[0].occurrence == datetime(2026, 3, 13, 3, 0, tzinfo=PARIS)


def test_fire_cron_skips_a_paused_task(driver: JobDriver) -> None:
    driver.pause_add(scope="task", target="testing.nightly")
    assert fire_cron(datetime(2026, 3, 10, 3, 0, tzinfo=PARIS), job=jobs.nightly) == []


def test_fire_cron_refuses_a_naive_instant_and_a_plain_job(driver: JobDriver) -> None:
    with pytest.raises(ValueError, match="aware datetime for at"):
        fire_cron(datetime(2026, 3, 10, 3, 0))
    with pytest.raises(TypeError, match=r"'testing\.other' is a job, not a cron job"):
        fire_cron(datetime(2026, 3, 10, 3, 0, tzinfo=UTC), job=jobs.other)


def test_the_jobs_helper_fires_cron_tasks(driver: JobDriver) -> None:
    at = datetime(2026, 3, 10, 3, 0, tzinfo=PARIS)
    fired = Jobs().fire_cron(at, job="testing.nightly")
    assert [(f.name, f.status) for f in fired] == [("testing.nightly", "created")]
