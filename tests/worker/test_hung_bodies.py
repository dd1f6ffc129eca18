"""Bodies that ignore their timeout: no job body starts after its attempt was settled, a worker
whose threads are held by abandoned bodies claims nothing it cannot run (and says so), and an
``async def`` body past its timeout is cancelled at its ``await``."""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from datetime import datetime

from tests.testapp import jobs
from tests.testapp.models import Effect
from tests.worker.conftest import wait_for
from ultimat3_jobs.models import Job, JobWorker

TIMED_OUT = "ultimat3_jobs.runtime.worker.execute.JobTimedOut"


class SilentServer:
    """A loopback server that accepts connections and never answers until it is closed."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.listener.settimeout(0.1)
        self.port = self.listener.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="silent-server", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted.append(conn)

    def close(self) -> None:
        """Close every connection: each blocked read returns at once."""
        self._closing.set()
        self._thread.join(5)
        self.listener.close()
        for conn in self.accepted:
            conn.close()


def settled_before_started(job_ids: list[uuid.UUID]) -> list[str]:
    """Effects (one per started body) of attempts whose failure was written before the body
    started: a job run after its attempt had ended."""
    late = []
    rows = Job.objects.filter(id__in=job_ids).values_list("id", "errors")
    settled_at = {
        (job_id, error["attempt"]): datetime.fromisoformat(error["at"])
        for job_id, errors in rows
        for error in errors
    }
    for effect in Effect.objects.filter(job_id__in=job_ids):
        at = settled_at.get((effect.job_id, effect.attempt))
        if at is not None and effect.created_at > at:
            late.append(f"{effect.job_id} attempt {effect.attempt}")
    return late


def test_hung_bodies_neither_run_jobs_late_nor_hold_claimed_jobs(make_worker, caplog) -> None:
    caplog.set_level(logging.INFO, logger="ultimat3_jobs.worker")
    server = SilentServer()
    try:
        hung = [r.id for r in jobs.hangs_on_socket.enqueue_many([{"port": server.port}] * 8)]
        running = make_worker(concurrency=4)
        wait_for(
            lambda: Effect.objects.filter(job_id__in=hung).count() == 8,
            timeout=20,
            what="the 8 hanging bodies started",
        )
        normal = [r.id for r in jobs.timed_record.enqueue_many([{"n": n} for n in range(50)])]
        wait_for(
            lambda: Job.objects.filter(id__in=hung, state="failed").count() == 8,
            timeout=20,
            what="the hanging attempts settled as timed out",
        )
        # Longer than the normal jobs' own timeout (2 s) plus its grace: a normal job claimed
        # with no thread to run it would time out meanwhile and run later, after its settle.
        time.sleep(3.0)
        waiting = Job.objects.filter(id__in=normal, state="queued", attempt=0).count()
        assert waiting == 50, "the worker claimed jobs while no thread could run them"
        assert running.worker.threads_abandoned == 8
        assert "jobs.worker.threads_abandoned: 8 body threads are held" in caplog.text
        assert "0 of 4 slots can run a body" in caplog.text
        worker_id = running.worker.config.worker_id
        wait_for(
            lambda: JobWorker.objects.filter(id=worker_id, slots=0).exists(),
            timeout=5,
            what="the registry row showing no usable slot",
        )
    finally:
        server.close()
    wait_for(
        lambda: Job.objects.filter(id__in=normal, state="completed").count() == 50,
        timeout=30,
        what="every normal job completed once the threads came back",
    )
    wait_for(lambda: running.worker.threads_abandoned == 0, timeout=10)
    assert "jobs.worker.thread_returned" in caplog.text

    assert settled_before_started(hung + normal) == []
    runs = list(Effect.objects.filter(job_id__in=normal).values_list("job_id", "attempt"))
    assert sorted(runs) == sorted((job_id, 1) for job_id in normal), "a normal job ran twice"
    assert set(Job.objects.filter(id__in=normal).values_list("attempt", flat=True)) == {1}
    for row in Job.objects.filter(id__in=hung):
        assert (row.state, row.attempt, len(row.errors)) == ("failed", 1, 1)
        assert row.errors[0]["error_class"] == TIMED_OUT
    assert Effect.objects.filter(job_id__in=hung).count() == 8
    wait_for(lambda: JobWorker.objects.filter(id=worker_id, slots=4).exists(), timeout=5)


def test_an_async_body_past_its_timeout_is_cancelled_and_settled_once(make_worker, caplog) -> None:
    caplog.set_level(logging.INFO, logger="ultimat3_jobs.worker")
    jobs.ASYNC_CANCELLED.clear()
    result = jobs.async_sleeps.enqueue(seconds=60)
    make_worker()
    wait_for(lambda: Job.objects.filter(id=result.id, state="failed").exists(), timeout=15)
    row = Job.objects.get(id=result.id)
    assert row.attempt == 2
    assert [error["attempt"] for error in row.errors] == [1, 2]
    assert {error["error_class"] for error in row.errors} == {TIMED_OUT}
    cancelled = list(jobs.ASYNC_CANCELLED)
    assert cancelled == [(str(result.id), 1), (str(result.id), 2)]
    wait_for(lambda: jobs.SETTLED, what="the on_settled hook")
    settled = list(jobs.SETTLED)
    assert settled == [(str(result.id), "dead-lettered", 2)]
    assert "jobs.timeout.abandoned" not in caplog.text  # cancelled, not left running
