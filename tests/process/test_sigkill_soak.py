"""SIGKILL soak: busy workers die mid-job, again and again; nothing is lost or settled twice.

Three workers drain ``tests.record`` jobs (a few milliseconds of sleep each, so a kill lands
mid-job). Every ~1.5 s the busiest worker is SIGKILLed and a replacement started, until 10 kills
have caught jobs in flight (a kill that lands between a settle and the next claim catches none
and is not counted). The backlog is topped up as it drains, so the workers stay saturated.
At the end:

* 0 lost: every job enqueued ended ``completed``;
* 0 completed twice: the ``completed`` counter equals the completed rows, no attempt ran its
  body twice, and each stored result is the one of the row's final attempt;
* 0 left ``running``;
* each job that was running under a killed worker settled within lease + rescue interval + 5 s
  of the kill (of the last kill it was caught by, should a later kill catch its retry too).
"""

from __future__ import annotations

import itertools
import random
import signal
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from django.db.models import Count

from tests.process.audit import audit, db_now, enqueue, settled
from tests.process.conftest import WorkerProcess, Workers
from tests.settings_process import PROCESS_TIMINGS
from ultimat3_jobs.models import Job

# A soak: run once per CI run (the slow marker), on the first Python.
pytestmark = [pytest.mark.process, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LEASE = float(PROCESS_TIMINGS["VISIBILITY_TIMEOUT_SECONDS"])
RESCUE = float(PROCESS_TIMINGS["RESCUE_INTERVAL_SECONDS"])
SETTLE_BOUND = LEASE + RESCUE + 5.0

WORKERS = 3
CONCURRENCY = 3
KILLS = 10
KILL_EVERY = 1.5
KILL_PHASE_LIMIT = 90.0
MIN_JOBS = 1000
FIRST_WAVE = 400
BACKLOG_LOW = 80
"""Top the queue up when fewer jobs than this wait: enough to keep every slot busy, few enough
that a rescued job (due at its rescue, so behind the backlog) is claimed soon after."""
WAVE = 60
JOB = "tests.record_quick_retry"
"""``tests.record`` with a retry backoff of 50 ms: a rescued attempt waits its job's backoff
(``worker.policy``), and this test bounds the rescue's latency, not a backoff."""
# Retries of a job killed more than once are not failures: leave room beyond the default 3.
MAX_ATTEMPTS = 6


@dataclass
class Kill:
    worker_id: str
    pid: int
    at: datetime
    """The database's clock right after the process was reaped."""
    in_flight: list[uuid.UUID]


def test_sigkill_soak(workers: Workers) -> None:
    rng = random.Random(20261129)
    numbers = itertools.count()

    def wave(size: int) -> list[uuid.UUID]:
        inputs = [
            {"n": next(numbers), "sleep": round(rng.uniform(0.005, 0.02), 4)} for _ in range(size)
        ]
        return enqueue(JOB, inputs, max_attempts=MAX_ATTEMPTS)

    ids = wave(FIRST_WAVE)
    generation = itertools.count()
    live = [
        workers.start(f"soak-{next(generation)}", concurrency=CONCURRENCY) for _ in range(WORKERS)
    ]
    workers.wait_registered(*live)

    kills: list[Kill] = []
    next_kill = time.monotonic() + KILL_EVERY
    give_up = time.monotonic() + KILL_PHASE_LIMIT
    while sum(1 for kill in kills if kill.in_flight) < KILLS:
        workers.check_started()
        if time.monotonic() > give_up:
            pytest.fail(f"only {len(kills)} kills in {KILL_PHASE_LIMIT:g} s\n{workers.report()}")
        if Job.objects.filter(state="queued").count() < BACKLOG_LOW:
            ids += wave(WAVE)
        if time.monotonic() < next_kill:
            time.sleep(0.05)
            continue
        victim = _busiest(live)
        if victim is None:
            time.sleep(0.05)  # no worker holds a job this instant; look again
            continue
        victim.signal(signal.SIGKILL)
        victim.wait(10)
        at = db_now()
        in_flight = list(
            Job.objects.filter(state="running", worker_id=victim.worker_id).values_list(
                "id", flat=True
            )
        )
        kills.append(Kill(victim.worker_id, victim.pid, at, in_flight))
        live.remove(victim)
        live.append(workers.start(f"soak-{next(generation)}", concurrency=CONCURRENCY))
        next_kill = time.monotonic() + KILL_EVERY
    if len(ids) < MIN_JOBS:
        ids += wave(MIN_JOBS - len(ids))

    workers.wait(lambda: settled(ids), timeout=90, what=f"all {len(ids)} jobs settled")
    assert all(process.alive() for process in live), workers.report()

    report = audit(JOB, ids)
    assert report.problems() == [], workers.report()

    rows = {
        job_id: (started_at, finished_at, errors)
        for job_id, started_at, finished_at, errors in Job.objects.filter(id__in=ids).values_list(
            "id", "started_at", "finished_at", "errors"
        )
    }
    last_kill: dict[uuid.UUID, Kill] = {}
    for kill in kills:
        for job_id in kill.in_flight:
            last_kill[job_id] = kill
    delays = {
        job_id: (rows[job_id][1] - kill.at).total_seconds() for job_id, kill in last_kill.items()
    }
    late = {
        str(job_id): _timeline(rows[job_id], last_kill[job_id])
        for job_id, delay in delays.items()
        if delay > SETTLE_BOUND
    }
    caught = [len(kill.in_flight) for kill in kills]
    assert not late, (
        f"settled later than {SETTLE_BOUND:g} s after the kill: {late}\n{workers.report()}"
    )

    killed_twice = sum(
        1 for job_id in last_kill if sum(job_id in kill.in_flight for kill in kills) > 1
    )
    slowest = max(delays, key=delays.__getitem__)
    print(f"\n[soak] slowest settle after a kill: {_timeline(rows[slowest], last_kill[slowest])}")
    print(
        f"[soak] {len(ids)} jobs, {len(kills)} SIGKILLs, in flight per kill {caught}, "
        f"{len(last_kill)} jobs caught ({killed_twice} more than once); settle delay after "
        f"the kill: min {min(delays.values()):.2f} s, max {max(delays.values()):.2f} s "
        f"(bound {SETTLE_BOUND:g} s); {report.retried_jobs} jobs took more than one attempt "
        f"(max attempt {report.max_attempt}); counter {report.counter_completed} == "
        f"{report.completed} completed"
    )


def _timeline(row: tuple[datetime, datetime, list[dict[str, Any]]], kill: Kill) -> str:
    """When, after the kill, the job was rescued, claimed again and settled."""
    started_at, finished_at, errors = row
    rescued = [e["at"] for e in errors if e["error_class"] == "ultimat3_jobs.LeaseExpired"]
    marks = {"claimed": started_at, "settled": finished_at}
    if rescued:
        marks = {"rescued": datetime.fromisoformat(rescued[-1]), **marks}
    return ", ".join(
        f"{name} +{(at - kill.at).total_seconds():.2f} s" for name, at in marks.items()
    )


def _busiest(live: list[WorkerProcess]) -> WorkerProcess | None:
    """The live worker holding the most running jobs, or None when none holds any."""
    holding = dict(
        Job.objects.filter(state="running", worker_id__in=[p.worker_id for p in live])
        .values_list("worker_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    best = max(live, key=lambda process: holding.get(process.worker_id, 0))
    return best if holding.get(best.worker_id, 0) else None
