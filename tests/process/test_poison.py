"""A poison job: each attempt kills its worker process; it fails after its 3 attempts.

``tests.exit_hard`` (3 attempts, backoff 5 s then 10 s, no jitter) calls ``os._exit(1)`` in the
body. Two workers, restarted by a small supervisor loop in this test whenever one dies, also
drain 200 ordinary jobs with the same 3 attempts. Each of the poison's attempts ends by lease
expiry (the process is gone), so the rescuer appends a ``ultimat3_jobs.LeaseExpired`` error per
attempt, sends it back to wait its backoff (it does not crash-loop through the fleet) and, after
the third, fails it for good. The ordinary jobs all complete, those that shared a process with
the poison when it died at their second attempt at the latest: their own (shorter) backoff
brings them back before the poison, so they do not die beside it again.
"""

from __future__ import annotations

import itertools
import time
from datetime import datetime
from typing import Any

import pytest

from tests.process.audit import audit, enqueue, settled
from tests.process.conftest import WorkerProcess, Workers
from tests.testapp.jobs import exit_hard
from tests.testapp.models import Effect
from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.models import Job

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

ORDINARY = 200
LEASE_EXPIRED = "ultimat3_jobs.LeaseExpired"


def _seconds(later: datetime, earlier_iso: str) -> float:
    return (later - datetime.fromisoformat(earlier_iso)).total_seconds()


def test_a_poison_job_fails_after_its_attempts_and_the_rest_complete(workers: Workers) -> None:
    [poison] = enqueue("tests.exit_hard", [{}], max_attempts=3)
    ordinary = enqueue(
        "tests.record", [{"n": n, "sleep": 0.01} for n in range(ORDINARY)], max_attempts=3
    )
    names = itertools.count()
    slots: list[WorkerProcess] = [
        workers.start(f"poison-{next(names)}", concurrency=2) for _ in range(2)
    ]
    deaths: list[tuple[str, int | None]] = []
    # (attempt, run_at, the rescue's error entry) each time the poison is seen waiting again.
    waits: dict[int, tuple[datetime, dict[str, Any]]] = {}

    def supervise() -> bool:
        for index, process in enumerate(slots):
            if not process.alive():
                deaths.append((process.worker_id, process.popen.poll()))
                process.expect_exit(1)  # the poison's os._exit(1)
                slots[index] = workers.start(f"poison-{next(names)}", concurrency=2)
        seen = Job.objects.filter(id=poison, state="queued", attempt__gt=0).values_list(
            "attempt", "run_at", "errors"
        )
        for attempt, run_at, errors in seen:
            waits.setdefault(attempt, (run_at, errors[-1]))
        done = Job.objects.filter(id=poison, state="failed").exists() and settled(ordinary)
        if not done:
            time.sleep(0.1)
        return done

    started = time.monotonic()
    workers.wait(supervise, timeout=90, what="the poison failed and the other jobs settled")
    took = time.monotonic() - started

    row = Job.objects.get(id=poison)
    assert (row.state, row.attempt) == ("failed", 3), workers.report()
    assert [(e["attempt"], e["error_class"]) for e in row.errors] == [
        (1, "ultimat3_jobs.LeaseExpired"),
        (2, "ultimat3_jobs.LeaseExpired"),
        (3, "ultimat3_jobs.LeaseExpired"),
    ], workers.report()
    assert row.finished_at is not None
    runs = sorted(Effect.objects.filter(job_id=poison).values_list("attempt", "worker_pid"))
    assert [attempt for attempt, _ in runs] == [1, 2, 3]
    assert len({pid for _, pid in runs}) == 3, "each attempt died in its own process"
    assert len(deaths) == 3 and {code for _, code in deaths} == {1}, (deaths, workers.report())

    # Each rescued retry of the poison waited its backoff from the moment of its rescue
    # (5 s, then 10 s: jitter 0), read from the rows while it waited.
    policy = exit_hard.definition.retry
    assert sorted(waits) == [1, 2], (waits, workers.report())
    for attempt, (run_at, entry) in waits.items():
        assert (entry["attempt"], entry["error_class"]) == (attempt, LEASE_EXPIRED)
        assert _seconds(run_at, entry["at"]) >= policy.delay_seconds(attempt) - 0.001, (
            attempt,
            run_at,
            entry,
        )

    report = audit("tests.record", ordinary)
    assert report.problems() == [], workers.report()
    assert report.max_attempt <= 2, (report.max_attempt, workers.report())
    # A neighbour rescued after its body started waited its own backoff (the default Retry:
    # 1 s, jitter 10 %), read from its final row: the claim and the ack keep the rescue's run_at.
    settings = get_settings()
    least = settings.retry_backoff_base_seconds * (1 - settings.retry_jitter)
    rescued_neighbours = [
        (run_at, errors[-1])
        for run_at, errors in Job.objects.filter(id__in=ordinary).values_list("run_at", "errors")
        if errors and errors[-1]["error_class"] == LEASE_EXPIRED
    ]
    for run_at, entry in rescued_neighbours:
        assert _seconds(run_at, entry["at"]) >= least - 0.001, (run_at, entry)
    assert all(process.alive() for process in slots), workers.report()
    neighbours = {
        str(job_id)[:8]: [e["worker_id"] for e in errors]
        for job_id, errors in Job.objects.filter(id__in=ordinary, attempt__gt=1).values_list(
            "id", "errors"
        )
    }
    print(
        f"\n[poison] failed after 3 attempts in {took:.1f} s; worker deaths {deaths}; "
        f"ordinary jobs that died beside it (workers of their lost attempts): {neighbours}; "
        f"rescued neighbours that waited a backoff: {len(rescued_neighbours)}"
    )
