"""Worker tests run a real Worker in a thread against the real database (commits matter)."""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from tests.testapp.jobs import SETTLED
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.runtime.worker import Worker, WorkerConfig

FAST = {
    "queues": ("default", "math"),
    "concurrency": 4,
    "lease_seconds": 5.0,
    "heartbeat_interval": 0.2,
    "rescue_interval": 0.5,
    "registry_interval": 1.0,
    "poll_floor": 0.01,
    "poll_ceiling": 0.2,
    "poll_ceiling_wake": 0.5,
    "shutdown_grace": 2.0,
    "timeout_grace": 0.3,
    "ack_flush": 0.002,
    "progress_interval": 0.0,
}


class RunningWorker:
    """A Worker on its own thread, stopped (and joined) by the fixture."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.code: int | None = None
        self.thread = threading.Thread(target=self._run, name="test-worker", daemon=True)

    def _run(self) -> None:
        self.code = self.worker.run()

    def start(self) -> RunningWorker:
        self.thread.start()
        assert self.worker.started.wait(10)
        return self

    def stop(self, timeout: float = 60) -> int | None:
        if self.thread.is_alive():
            self.worker.request_stop(reason="test finished")
        self.thread.join(timeout)
        assert not self.thread.is_alive(), f"the worker did not stop\n{thread_stacks()}"
        return self.code


def thread_stacks() -> str:
    """Where every live thread is, for a worker that would not stop."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    return "\n".join(
        f"--- {names.get(ident, ident)}\n{''.join(traceback.format_stack(frame))}"
        for ident, frame in sys._current_frames().items()
    )


def wait_for(predicate: Callable[[], Any], timeout: float = 15.0, what: str = "") -> Any:
    """Poll ``predicate`` until it answers something truthy; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what or predicate}")


@pytest.fixture
def make_worker(transactional_db: None) -> Iterator[Callable[..., RunningWorker]]:
    started: list[RunningWorker] = []
    SETTLED.clear()

    def make(*, driver: Any = None, start: bool = True, **options: Any) -> RunningWorker:
        config = replace(WorkerConfig(**FAST), **options)
        running = RunningWorker(Worker(driver or PostgresDriver(), config))
        started.append(running)
        return running.start() if start else running

    yield make
    for running in started:
        running.stop()
