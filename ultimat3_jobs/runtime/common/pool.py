"""``BodyPool``: the threads job bodies (and settle hooks) run on.

A small pool of its own rather than ``ThreadPoolExecutor`` for one reason: a thread that ends closes
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

from django.db import close_old_connections, connections
from django.db.backends.signals import connection_created

logger = logging.getLogger("ultimat3_jobs.worker")


class _Opened(threading.local):
    """Whether the calling thread ever opened a database connection (``connection_created``
    is sent on the thread that connects)."""

    any = False


_opened = _Opened()


def _opened_here(sender: object, **kwargs: object) -> None:
    _opened.any = True


connection_created.connect(_opened_here, dispatch_uid="ultimat3_jobs.thread_opened")


def close_old_thread_connections() -> None:
    """Django's ``close_old_connections()`` for the calling thread, as Django runs it after a
    request: a connection left broken, in a transaction or past its age is closed. Skipped on
    a thread that never connected, which has nothing to check: the check itself (a failed
    thread-local lookup per alias) cost more than a no-op body."""
    if _opened.any:
        close_old_connections()


def close_thread_connections() -> None:
    """Close every database connection the calling thread opened."""
    try:
        connections.close_all()
    except Exception:
        logger.debug("closing a thread's connections failed", exc_info=True)


class _Serving:
    """A pool thread's own state, reached through the pool's thread-local once per callable
    handed in (not once per attribute): whether the thread runs a ``done`` now, and the
    callable that ``done`` gave it to run next."""

    __slots__ = ("ending", "next")

    def __init__(self) -> None:
        self.ending = False
        self.next: tuple[Callable[..., Any], tuple[Any, ...], Done] | None = None


class _PoolLocal(threading.local):
    """A pool's thread-local: ``serving`` is ``None`` on a thread not of the pool, from the
    class, where a ``getattr`` with a default failed its look-up first (an ``AttributeError``
    made and dropped, about 5,000 instructions; callgrind) on every start from the claim loop."""

    serving: _Serving | None = None


Done = Callable[[Any, BaseException | None], None]
"""Called on the pool's thread with a callable's result (or ``None``) and its exception (or
``None``), after the thread counts as idle again."""


class BodyPool:
    """Up to ``size`` threads, started as they are needed, taking callables from one queue;
    ``submit`` answers a Future, ``call`` hands the ending to a callback (no Future: the
    worker's per-job path). A callable that a ``done`` passes to ``call`` runs next on that
    same thread (a body that ends starts the next one without waking another thread: a switch
    of threads per job costs more CPU than a no-op body); any further one from the same
    ``done`` goes to the queue.

    ``idle()`` counts the threads (started or not yet) that could start a callable submitted
    now: a thread busy with a callable that never returns (a body abandoned past its timeout)
    is not one of them.
    """

    def __init__(self, size: int, *, name: str) -> None:
        self._tasks: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...], Done] | None]
        self._tasks = queue.SimpleQueue()
        self.size = size
        self._name = name
        self._busy = 0
        self._busy_lock = threading.Lock()
        self._local = _PoolLocal()
        # Threads start when the queue holds more callables than the idle threads (those
        # about to take from it) can take, up to ``size``, rather than all at once: a process
        # that runs a few jobs, or none, does not pay for ``size`` threads. The three are
        # guarded by ``_busy_lock``.
        self._threads: list[threading.Thread] = []
        self._queued = 0
        self._idle_threads = 0
        self._closed = False

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
        serving = self._local.serving
        if serving is not None and serving.ending and serving.next is None:
            # Called from a ``done`` of this pool (a body ended and starts the next): this
            # thread runs it as soon as ``done`` returns, instead of waking another thread.
            with self._busy_lock:
                self._busy += 1
                self._idle_threads -= 1  # this one is not idle after all
                thread = self._more_threads()
            serving.next = (fn, args, done)
            if thread is not None:
                thread.start()
            return
        with self._busy_lock:
            self._busy += 1
            self._queued += 1
            thread = self._more_threads()
        self._tasks.put((fn, args, done))
        if thread is not None:
            thread.start()

    def _more_threads(self) -> threading.Thread | None:
        """A new thread (to start) when the queue holds more than the idle threads will
        take and the pool is not full; called under ``_busy_lock``."""
        if self._closed or self._queued <= self._idle_threads or len(self._threads) >= self.size:
            return None
        thread = threading.Thread(
            target=self._serve, name=f"{self._name}-{len(self._threads)}", daemon=True
        )
        self._threads.append(thread)
        self._idle_threads += 1
        return thread

    def idle(self) -> int:
        """Threads not running or about to run a submitted callable. A snapshot, read without
        the lock (one attribute read cannot be torn; a count taken under the lock is as stale
        by the time the caller acts on it): the worker asks several times per job."""
        return self.size - self._busy

    def shutdown(self, *, timeout: float) -> list[str]:
        """Stop every thread once its current task ends; answers the names of threads still
        busy after ``timeout`` (bodies abandoned past their timeout)."""
        with self._busy_lock:
            self._closed = True
            threads = list(self._threads)
        for _ in threads:
            self._tasks.put(None)
        for thread in threads:
            thread.join(timeout / max(1, len(threads)))
        return [thread.name for thread in threads if thread.is_alive()]

    def _take(self) -> tuple[Callable[..., Any], tuple[Any, ...], Done] | None:
        """The next callable from the queue (``None``: stop); the calling thread counts as
        idle until it has one."""
        task = self._tasks.get()
        with self._busy_lock:
            self._idle_threads -= 1
            if task is not None:
                self._queued -= 1
        return task

    def _serve(self) -> None:
        serving = self._local.serving = _Serving()  # read here as a local, not per task
        try:
            while True:
                task, serving.next = serving.next, None
                if task is None:
                    task = self._take()
                if task is None:
                    return
                fn, args, done = task
                # The thread counts as idle again before ``done`` runs, so that a callback
                # asking how many threads are idle sees this one.
                try:
                    result, error = fn(*args), None
                except BaseException as exc:
                    result, error = None, exc
                with self._busy_lock:  # idle until it takes the next callable
                    self._busy -= 1
                    self._idle_threads += 1
                serving.ending = True
                try:
                    done(result, error)
                except Exception:
                    logger.exception("a pool callback raised")
                finally:
                    serving.ending = False
        finally:
            close_thread_connections()
