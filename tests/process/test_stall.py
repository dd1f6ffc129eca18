"""SIGSTOP past the lease: a stalled worker's late writes are all refused by the fence.

Worker A starts ``process.stale_writer`` (a first attempt that sleeps longer than the 5 s lease)
and is SIGSTOPped at once. Worker B, started after the stop, rescues the job when A's lease
ends and completes it as attempt 2. Then A is continued, and everything it still writes about
its attempt comes too late. Which write A tries first after SIGCONT is a race between its
maintenance thread (the heartbeat) and the body's thread (progress, then the ack); each test
settles the race one way so that every fenced write is exercised:

* heartbeat first: the body waits on its cancel for 30 s, so A's first write is the heartbeat;
  it misses, A marks the attempt lost and cancels it, and the body writes nothing more;
* body first: A's maintenance thread is held (before the SIGSTOP) inside its registry write by a
  row lock this test takes on A's ``x_job_workers`` row, so no heartbeat runs after SIGCONT;
  the body's progress report, which no heartbeat stores now, travels with its ack (one fenced
  statement), which reaches the database and misses.

Either way B's ending stands: ``completed``, B's result and progress, one completion counted.
"""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from django.db import connection

from tests.process.audit import completed_counter, enqueue
from tests.process.conftest import WorkerProcess, Workers
from tests.processapp.jobs import STALE_WRITER
from tests.settings_process import PROCESS_APPLICATION_NAME
from tests.testapp.models import Effect
from ultimat3_jobs.drivers.postgres.listen import connection_params
from ultimat3_jobs.models import Job

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def test_heartbeat_of_a_stalled_worker_is_refused_and_its_attempt_dropped(
    workers: Workers,
) -> None:
    [job_id] = enqueue(STALE_WRITER, [{"first_sleep": 30.0, "cooperative": True}])
    a = _start_attempt_1(workers, job_id)
    a.signal(signal.SIGSTOP)
    won = _b_completes_attempt_2(workers, job_id, a)

    a.signal(signal.SIGCONT)
    workers.wait(
        lambda: "jobs.worker.lease_lost" in a.log(), timeout=15, what="A found its lease lost"
    )
    _stop(workers, a)
    log = a.log()
    assert "jobs.settle.unowned" in log, workers.report()
    assert f"heartbeat of job {job_id} did not land" in log, workers.report()
    _assert_b_ending_stands(workers, job_id, won, a)
    print(f"\n[stall/heartbeat first] A's refused writes: {_refused(log, job_id)}")


def test_progress_and_ack_of_a_stalled_worker_are_refused(workers: Workers) -> None:
    [job_id] = enqueue(STALE_WRITER, [{"first_sleep": 8.0, "cooperative": False}])
    a = _start_attempt_1(workers, job_id)
    with _hold_registry_row(workers, a.worker_id):
        a.signal(signal.SIGSTOP)
        won = _b_completes_attempt_2(workers, job_id, a)
        a.signal(signal.SIGCONT)
        workers.wait(
            lambda: f"ack of job {job_id} did not land" in a.log(),
            timeout=20,
            what="A's stale ack refused",
        )
    _stop(workers, a)
    log = a.log()
    assert "jobs.settle.unowned" in log, workers.report()
    # No heartbeat ran after SIGCONT (held on the registry row), so A's stale progress was
    # still pending and went with the ack that missed.
    assert f"heartbeat of job {job_id} did not land" not in log, workers.report()
    _assert_b_ending_stands(workers, job_id, won, a)
    print(f"\n[stall/body first] A's refused writes: {_refused(log, job_id)}")


# -- steps ---------------------------------------------------------------------------------------


def _start_attempt_1(workers: Workers, job_id: uuid.UUID) -> WorkerProcess:
    a = workers.start("stall-a", concurrency=1)
    workers.wait(
        lambda: Effect.objects.filter(job_id=job_id, attempt=1, worker_pid=a.pid).exists(),
        timeout=30,
        what="A started attempt 1",
    )
    return a


def _b_completes_attempt_2(workers: Workers, job_id: uuid.UUID, a: WorkerProcess) -> Job:
    stopped = time.monotonic()
    b = workers.start("stall-b", concurrency=1)
    workers.wait(
        lambda: Job.objects.filter(id=job_id, state="completed").exists(),
        timeout=30,
        what="B completed the job",
    )
    print(f"\n[stall] B completed attempt 2 {time.monotonic() - stopped:.2f} s after A's SIGSTOP")
    won: Job = Job.objects.get(id=job_id)
    assert (won.attempt, won.worker_id) == (2, "stall-b"), workers.report()
    assert won.result == {"attempt": 2, "pid": b.pid}
    assert won.progress == {"current": 1, "total": 1, "attempt": 2, "pid": b.pid}
    assert [(e["attempt"], e["error_class"], e["worker_id"]) for e in won.errors] == [
        (1, "ultimat3_jobs.LeaseExpired", "stall-a")
    ]
    return won


def _stop(workers: Workers, a: WorkerProcess) -> None:
    """Stop A cleanly: it settles (or releases) whatever it still holds, through the fence."""
    a.signal(signal.SIGTERM)
    assert a.wait(15) == 0, workers.report()


def _assert_b_ending_stands(
    workers: Workers, job_id: uuid.UUID, won: Job, a: WorkerProcess
) -> None:
    final = Job.objects.get(id=job_id)
    assert final.state == "completed", workers.report()
    assert (final.attempt, final.worker_id, final.result) == (2, "stall-b", won.result)
    assert final.progress == won.progress, "A's stale progress report landed"
    assert final.errors == won.errors
    assert final.finished_at == won.finished_at
    assert completed_counter(STALE_WRITER) == 1, workers.report()
    attempts = sorted(Effect.objects.filter(job_id=job_id).values_list("attempt", "worker_pid"))
    assert attempts[0] == (1, a.pid) and [n for n, _ in attempts] == [1, 2]


def _refused(log: str, job_id: uuid.UUID) -> list[str]:
    return [
        write
        for write in ("heartbeat", "progress", "ack")
        if f"{write} of job {job_id} did not land" in log
    ] + (["lease_lost"] if "jobs.worker.lease_lost" in log else [])


@contextmanager
def _hold_registry_row(workers: Workers, worker_id: str) -> Iterator[None]:
    """Lock ``worker_id``'s registry row from another session until the block ends, and wait
    until one of that worker's sessions (its maintenance thread's next registry write) waits on
    that lock."""
    params: dict[str, Any] = connection_params("default", "ultimat3_jobs.process_test.lock")
    with psycopg.connect(**params) as locker:
        locker.execute("select 1 from x_job_workers where id = %s for update", [worker_id])
        try:
            workers.wait(
                lambda: _blocked_by(locker.info.backend_pid),
                timeout=10,
                what="A's registry write waits on the lock",
            )
            yield
        finally:
            locker.rollback()


def _blocked_by(locker_pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "select count(*) from pg_stat_activity where datname = current_database() "
            "and application_name = %s and %s = any(pg_blocking_pids(pid))",
            [PROCESS_APPLICATION_NAME, locker_pid],
        )
        return bool(cursor.fetchone()[0])
