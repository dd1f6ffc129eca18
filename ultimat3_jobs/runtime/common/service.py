"""``Service``: the frame of a loop that runs in a process of its own or beside a worker (the
relay, the scheduler): its store and config, the events tests wait on, and how ``run()`` starts
and always ends."""

from __future__ import annotations

import threading

from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.runtime.common.pool import close_thread_connections


class Service[C]:
    """``run()`` calls ``_open()``, sets ``started``, and runs ``_serve()`` until it returns;
    then, however it ended, ``_close()``, this thread's connections closed, and ``stopped``
    set. Tests wait on ``started`` and ``stopped`` instead of sleeping."""

    def __init__(self, driver: JobDriver, config: C) -> None:
        self.driver = driver
        self.config = config
        self.started = threading.Event()
        self.stopped = threading.Event()

    def run(self) -> int:
        self._open()
        self.started.set()
        try:
            self._serve()
        finally:
            try:
                self._close()
            finally:
                close_thread_connections()
                self.stopped.set()
        return 0

    def _open(self) -> None:
        """Before ``started``: what the loop needs first (a wake subscription, a log line)."""

    def _serve(self) -> None:
        raise NotImplementedError

    def _close(self) -> None:
        """After the loop, before the connections close: give back what it held."""
