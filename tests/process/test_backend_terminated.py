"""``pg_terminate_backend`` mid-drain: the worker reconnects and finishes, without exiting.

One worker drains 500 ``tests.record`` jobs. Three times while it drains (after 100, 200 and 300
completions, so each round also proves the worker recovered from the one before), every
session it holds is terminated: Django's connections of each of its threads, the wake listener's
and its probe's. The same process must then finish every job: nothing lost, nothing settled
twice, nothing left running.
"""

from __future__ import annotations

import time

import pytest
from django.db import connection

from tests.process.audit import audit, enqueue, settled
from tests.process.conftest import WORKER_SESSIONS, Workers, worker_sessions
from ultimat3_jobs.models import Job, JobWorker

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

JOBS = 500
ROUNDS = 3
EVERY = 100
# A body that fails on a terminated connection is retried (1 s backoff), not lost: room for it.
MAX_ATTEMPTS = 5


def terminate_worker_sessions() -> int:
    """Terminate every session of the worker subprocesses; never this test's own."""
    with connection.cursor() as cursor:
        cursor.execute(
            "select count(*) filter (where pg_terminate_backend(pid)) from pg_stat_activity "
            "where datname = current_database() and pid <> pg_backend_pid() "
            "and application_name = any(%s)",
            [list(WORKER_SESSIONS)],
        )
        return int(cursor.fetchone()[0])


def completed() -> int:
    return Job.objects.filter(state="completed").count()


def test_the_worker_survives_its_sessions_being_terminated(workers: Workers) -> None:
    ids = enqueue(
        "tests.record",
        [{"n": n, "sleep": 0.03} for n in range(JOBS)],
        max_attempts=MAX_ATTEMPTS,
    )
    worker = workers.start("pgterm", concurrency=4)
    workers.wait_registered(worker)
    started = time.monotonic()

    rounds: list[tuple[int, int, int]] = []
    for round_ in range(1, ROUNDS + 1):
        target = round_ * EVERY
        workers.wait(
            lambda: completed() >= target,  # noqa: B023 -- called before the loop moves on
            timeout=30,
            what=f"{round_ * EVERY} jobs completed (the worker recovered from round {round_ - 1})",
        )
        before = len(worker_sessions())
        terminated = terminate_worker_sessions()
        assert terminated >= 2, f"round {round_}: only {terminated} sessions to terminate"
        rounds.append((completed(), before, terminated))
    assert completed() < JOBS, "the drain ended before the last round: make the jobs longer"

    workers.wait(lambda: settled(ids), timeout=60, what="every job settled")
    took = time.monotonic() - started
    assert worker.alive(), f"the worker exited\n{workers.report()}"
    assert JobWorker.objects.get(id="pgterm").pid == worker.pid
    report = audit("tests.record", ids)
    assert report.problems() == [], workers.report()
    log = worker.log()
    print(
        f"\n[pg_terminate_backend] {JOBS} jobs drained in {took:.1f} s by pid {worker.pid}; "
        f"rounds (completed, sessions, terminated): {rounds}; "
        f"{report.retried_jobs} jobs needed a second attempt (max {report.max_attempt}); "
        f"log: {log.count('claim_failed')} claim_failed, {log.count('settle.retry')} "
        f"settle.retry, {log.count('maintenance_failed')} maintenance_failed"
    )
