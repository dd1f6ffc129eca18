"""A poison job: each attempt kills its worker process; it fails after its 3 attempts.

``tests.exit_hard`` (3 attempts) calls ``os._exit(1)`` in the body. Two workers, restarted by
a small supervisor loop in this test whenever one dies, also drain 200 ordinary jobs. Each of
the poison's attempts ends by lease expiry (the process is gone), so the rescuer appends a
``ultimat3_jobs.LeaseExpired`` error per attempt and, after the third, fails it for good. The
ordinary jobs all complete, including those that shared a process with the poison when it died.
"""

from __future__ import annotations

import itertools
import time

import pytest

from tests.process.audit import audit, enqueue, settled
from tests.process.conftest import WorkerProcess, Workers
from tests.testapp.models import Effect
from ultimat3_jobs.models import Job

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

ORDINARY = 200
# A job claimed beside the poison dies with it, and a rescue sweeps both back at the same moment,
# so the next claim often takes them together again: an ordinary job can share all 3 of the
# poison's deaths. With more attempts than the poison has, it still completes.
ORDINARY_MAX_ATTEMPTS = 5


def test_a_poison_job_fails_after_its_attempts_and_the_rest_complete(workers: Workers) -> None:
    [poison] = enqueue("tests.exit_hard", [{}], max_attempts=3)
    ordinary = enqueue(
        "tests.record",
        [{"n": n, "sleep": 0.01} for n in range(ORDINARY)],
        max_attempts=ORDINARY_MAX_ATTEMPTS,
    )
    names = itertools.count()
    slots: list[WorkerProcess] = [
        workers.start(f"poison-{next(names)}", concurrency=2) for _ in range(2)
    ]
    deaths: list[tuple[str, int | None]] = []

    def supervise() -> bool:
        for index, process in enumerate(slots):
            if not process.alive():
                deaths.append((process.worker_id, process.popen.poll()))
                process.expect_exit(1)  # the poison's os._exit(1)
                slots[index] = workers.start(f"poison-{next(names)}", concurrency=2)
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

    report = audit("tests.record", ordinary)
    assert report.problems() == [], workers.report()
    assert all(process.alive() for process in slots), workers.report()
    neighbours = {
        str(job_id)[:8]: [e["worker_id"] for e in errors]
        for job_id, errors in Job.objects.filter(id__in=ordinary, attempt__gt=1).values_list(
            "id", "errors"
        )
    }
    print(
        f"\n[poison] failed after 3 attempts in {took:.1f} s; worker deaths {deaths}; "
        f"ordinary jobs that died beside it (workers of their lost attempts): {neighbours}"
    )
