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


Done = Callable[[Any, BaseException | None], None]
"""Called on the pool's thread with a callable's result (or ``None``) and its exception (or
``None``), after the thread counts as idle again."""


class BodyPool:
    """``size`` threads taking callables from one queue; ``submit`` answers a Future, ``call``
    hands the ending to a callback (no Future: the worker's per-job path). A callable that a
    ``done`` passes to ``call`` runs next on that same thread (a body that ends starts the next
    one without waking another thread: a switch of threads per job costs more CPU than a no-op
    body); any further one from the same ``done`` goes to the queue.

    ``idle()`` counts the threads that could start a callable submitted now: a thread busy
    with a callable that never returns (a body abandoned past its timeout) is not one of them.
    """

    def __init__(self, size: int, *, name: str) -> None:
        self._tasks: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...], Done] | None]
        self._tasks = queue.SimpleQueue()
        self.size = size
        self._busy = 0
        self._busy_lock = threading.Lock()
        self._local = threading.local()
        self._threads = [
            threading.Thread(target=self._serve, name=f"{name}-{index}", daemon=True)
            for index in range(size)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()

        def run() -> Any:
            if not future.set_running_or_notify_cancel():
                return None
            return fn(*args)

        def done(result: Any, exc: BaseException | None) -> None:
            if future.cancelled():
                return
            if exc is None:
                future.set_result(result)
            else:
                future.set_exception(exc)

        self.call(run, done=done)
        return future

    def call(self, fn: Callable[..., Any], *args: Any, done: Done) -> None:
        """Run ``fn(*args)`` on a pool thread, then ``done(result, exception)`` there."""
        with self._busy_lock:
            self._busy += 1
        local = self._local
        if getattr(local, "ending", False) and local.next is None:
            # Called from a ``done`` of this pool (a body ended and starts the next): this
            # thread runs it as soon as ``done`` returns, instead of waking another thread.
            local.next = (fn, args, done)
            return
        self._tasks.put((fn, args, done))

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
        local = self._local
        local.next = None
        try:
            while True:
                task, local.next = local.next, None
                if task is None:
                    task = self._tasks.get()
                if task is None:
                    return
                fn, args, done = task
                # The thread counts as idle again before ``done`` runs, so that a callback
                # asking how many threads are idle sees this one.
                try:
                    result, error = fn(*args), None
                except BaseException as exc:
                    result, error = None, exc
                self._not_busy()
                local.ending = True
                try:
                    done(result, error)
                except Exception:
                    logger.exception("a pool callback raised")
                finally:
                    local.ending = False
        finally:
            close_thread_connections()
