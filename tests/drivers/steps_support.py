"""Helpers of the step parity suite: a running attempt, and store controls that move the times
a step or an event was stamped with (a test transaction's ``now()`` never moves)."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import timedelta
from typing import Any

from tests.drivers.support import claim_one, enqueue
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.types import ClaimedJob


def running(driver: JobDriver, **overrides: Any) -> ClaimedJob:
    job_id = enqueue(driver, **overrides)
    job = claim_one(driver, (overrides.get("queue", "default"),))
    assert job.id == job_id
    return job


def done(driver: JobDriver, job: ClaimedJob, name: str, seq: int, output: str = "1") -> bool:
    return driver.step_put(
        job_id=job.id,
        claim_token=job.claim_token,
        name=name,
        seq=seq,
        kind="run",
        status="done",
        output_json=output,
    )


def wait(
    driver: JobDriver,
    job: ClaimedJob,
    name: str = "w",
    *,
    event: str = "paid",
    key: str | None = None,
    seconds: float = 3600.0,
):
    return driver.step_wait(
        job_id=job.id,
        claim_token=job.claim_token,
        name=name,
        seq=1,
        kind="event",
        event=event,
        key=key,
        seconds=seconds,
    )


def steps_of(driver: JobDriver, job_id: uuid.UUID) -> dict[str, Any]:
    return {step.name: step for step in driver.step_get_many(job_id=job_id)}


def shift_events(driver: JobDriver, seconds: float) -> None:
    """Move every stored event's ``created_at`` by ``seconds``."""
    delta = timedelta(seconds=seconds)
    if driver.name == "postgres":
        from django.db.models import F

        from ultimat3_jobs.models import JobEvent

        JobEvent.objects.update(created_at=F("created_at") + delta)
    elif driver.name == "redis":
        driver._shift_steps("events", seconds)  # type: ignore[attr-defined]
    else:
        for event in driver._events:  # type: ignore[attr-defined]
            event.created_at += delta


def shift_event_expiry(driver: JobDriver, seconds: float) -> None:
    delta = timedelta(seconds=seconds)
    if driver.name == "postgres":
        from django.db.models import F

        from ultimat3_jobs.models import JobEvent

        JobEvent.objects.update(expires_at=F("expires_at") + delta)
    elif driver.name == "redis":
        driver._shift_steps("expiry", seconds)  # type: ignore[attr-defined]
    else:
        for event in driver._events:  # type: ignore[attr-defined]
            event.expires_at += delta


def shift_wait(driver: JobDriver, job_id: uuid.UUID, name: str, seconds: float) -> None:
    """Move a stored wait's ``wait_since`` and ``wait_until`` by ``seconds``."""
    delta = timedelta(seconds=seconds)
    if driver.name == "postgres":
        from django.db.models import F

        from ultimat3_jobs.models import JobStep

        moved = JobStep.objects.filter(job_id=job_id, name=name).update(
            wait_since=F("wait_since") + delta, wait_until=F("wait_until") + delta
        )
        assert moved == 1
    elif driver.name == "redis":
        assert driver._shift_steps("wait", seconds, job_id, name) == 1  # type: ignore[attr-defined]
    else:
        steps = driver._steps[job_id]  # type: ignore[attr-defined]
        step = steps[name]
        steps[name] = replace(
            step, wait_since=step.wait_since + delta, wait_until=step.wait_until + delta
        )
