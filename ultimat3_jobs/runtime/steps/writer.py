"""Where a step's store calls run: never inside the body's open transaction.

A step write must land even when the body's ``transaction.atomic()`` later rolls back, and must
never wait on a lock the body's transaction holds. So, as the worker stores progress through its
own connection (with the heartbeat), a step write runs on a connection the body does not hold:

* a sync body outside any atomic block on the driver's database: on the body's own thread, whose
  connection is then in autocommit (one statement, no hop);
* a sync body inside one, and every ``async def`` body: on a small pool of the worker's own
  threads (each with its own autocommit connection, closed when the thread ends); an async body
  awaits the answer without blocking its event loop;
* a driver that writes through no Django connection (memory): on the calling thread.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from functools import partial
from typing import Any

from django.db import transaction

from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.errors import DriverUnavailable
from ultimat3_jobs.runtime.common.pool import BodyPool

STEP_WRITER_THREADS = 4
"""Threads per driver that run step writes for bodies inside a transaction and async bodies."""


class ThreadWriter:
    """The :class:`~ultimat3_jobs.model.steps.StepWriter` of a worker's driver."""

    def __init__(self, driver: JobDriver, *, threads: int = STEP_WRITER_THREADS) -> None:
        self._driver = driver
        self._threads = threads
        self._pool: BodyPool | None = None
        self._lock = threading.Lock()

    def _submit(self, method: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
        with self._lock:
            if self._pool is None:
                self._pool = BodyPool(self._threads, name="jobs-steps")
            pool = self._pool
        return pool.submit(partial(self._run, method, kwargs))

    def _run(self, method: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
        try:
            return method(**kwargs)
        except DriverUnavailable:
            self._driver.reset_connection()  # this thread's connection is broken: a fresh one
            raise

    def call(self, method: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
        database = self._driver.transaction_database
        if database is None or not transaction.get_connection(database).in_atomic_block:
            return method(**kwargs)  # on this thread: its connection is in autocommit
        return self._submit(method, kwargs).result()

    async def acall(self, method: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
        if self._driver.transaction_database is None:
            return method(**kwargs)
        return await asyncio.wrap_future(self._submit(method, kwargs))

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(timeout=5.0)


_writers: weakref.WeakKeyDictionary[JobDriver, ThreadWriter] = weakref.WeakKeyDictionary()
_writers_lock = threading.Lock()


def writer_for(driver: JobDriver) -> ThreadWriter:
    """The one writer of ``driver`` (its threads start with its first write off the body's
    thread)."""
    with _writers_lock:
        found = _writers.get(driver)
        if found is None:
            found = _writers[driver] = ThreadWriter(driver)
        return found


def close_writer(driver: JobDriver) -> None:
    """Stop the writer threads of ``driver`` (a stopping worker); a later write starts them
    again."""
    with _writers_lock:
        found = _writers.get(driver)
    if found is not None:
        found.close()
