"""``HeldThreads``: body threads held by bodies abandoned past their timeout.

Python cannot stop a thread, so a sync body that ignores its cancel keeps its pool thread until
it returns. The pool has spare threads beside the slots for such bodies; past the spares, each
held thread takes a slot away, and with none left the worker claims nothing: a claimed job
that waited for a thread would sit with a live lease and no body.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ultimat3_jobs.runtime.worker.attempt import Attempt

logger = logging.getLogger("ultimat3_jobs.worker")


class HeldThreads:
    """Counts the threads abandoned bodies hold and says what that leaves.

    ``on_change`` runs (on the calling thread) when the slots a body can run in change."""

    def __init__(self, *, concurrency: int, spare: int, on_change: Callable[[], None]) -> None:
        self.concurrency = concurrency
        self.spare = spare
        self.count = 0
        self._on_change = on_change
        self._lock = threading.Lock()

    def usable_slots(self) -> int:
        """The slots a body can run in now."""
        return max(0, self.concurrency - max(0, self.count - self.spare))

    def abandon(self, attempt: Attempt) -> None:
        """The attempt was settled without its body (the caller won ``take_settle``). A sync
        body that began and has not returned keeps its thread: count it."""
        is_async = attempt.definition is not None and attempt.definition.is_async
        with self._lock:
            # After take_settle ``began`` can no longer change; ``returned`` tells a body that
            # ended meanwhile.
            if not attempt.began or attempt.returned or is_async:
                return
            attempt.abandoned = True
            self.count += 1
        usable = self.usable_slots()
        logger.warning(
            "jobs.worker.threads_abandoned: %s body threads are held by abandoned bodies; "
            "%s of %s slots can run a body%s",
            self.count,
            usable,
            self.concurrency,
            "" if usable else "; this worker claims nothing until one returns",
        )
        if self.count > self.spare:
            self._on_change()

    def returned(self, attempt: Attempt, *, settling: bool = False) -> None:
        """The attempt's body returned (from the thread that ran it). ``settling``: that thread
        won the attempt's settle (``take_settle``), so nothing abandons it any more (an abandon
        wins the settle first): no lock to take (most bodies)."""
        if settling:
            attempt.returned = True
            return
        with self._lock:
            attempt.returned = True
            if not attempt.abandoned:
                return
            self.count -= 1
        logger.info(
            "jobs.worker.thread_returned: an abandoned body of %s %s returned; %s threads "
            "still held",
            attempt.job.name,
            attempt.job.id,
            self.count,
        )
        if self.count >= self.spare:  # it was past the spares: a slot came back
            self._on_change()
