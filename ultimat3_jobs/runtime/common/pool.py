"""``BodyPool``: the threads job bodies (and settle hooks) run on.

A small fixed pool rather than ``ThreadPoolExecutor`` for one reason: a thread that ends closes
the database connections it opened, as Django does at the end of a request, instead of leaving
them to the garbage collector.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from django.db import connections

logger = logging.getLogger("ultimat3_jobs.worker")


def close_thread_connections() -> None:
    """Close every database connection the calling thread opened."""
    try:
        connections.close_all()
    except Exception:
        logger.debug("closing a thread's connections failed", exc_info=True)


class BodyPool:
    """``size`` threads taking callables from one queue; ``submit`` answers a Future.

    ``idle()`` counts the threads that could start a callable submitted now: a thread busy
    with a callable that never returns (a body abandoned past its timeout) is not one of them.
    """

    def __init__(self, size: int, *, name: str) -> None:
        self._tasks: queue.SimpleQueue[
            tuple[Future[Any], Callable[..., Any], tuple[Any, ...]] | None
        ]
        self._tasks = queue.SimpleQueue()
        self.size = size
        self._busy = 0
        self._busy_lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._serve, name=f"{name}-{index}", daemon=True)
            for index in range(size)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self._busy_lock:
            self._busy += 1
        self._tasks.put((future, fn, args))
        return future

    def idle(self) -> int:
        """Threads not running or about to run a submitted callable."""
        with self._busy_lock:
            return self.size - self._busy

    def _not_busy(self) -> None:
        with self._busy_lock:
            self._busy -= 1

    def shutdown(self, *, timeout: float) -> list[str]:
        """Stop every thread once its current task ends; answers the names of threads still
        busy after ``timeout`` (bodies abandoned past their timeout)."""
        for _ in self._threads:
            self._tasks.put(None)
        for thread in self._threads:
            thread.join(timeout / max(1, len(self._threads)))
        return [thread.name for thread in self._threads if thread.is_alive()]

    def _serve(self) -> None:
        try:
            while True:
                task = self._tasks.get()
                if task is None:
                    return
                future, fn, args = task
                if not future.set_running_or_notify_cancel():
                    self._not_busy()
                    continue
                # The thread counts as idle again before the Future's callbacks run, so that a
                # callback asking how many threads are idle sees this one.
                try:
                    result = fn(*args)
                except BaseException as exc:
                    self._not_busy()
                    future.set_exception(exc)
                else:
                    self._not_busy()
                    future.set_result(result)
        finally:
            close_thread_connections()
