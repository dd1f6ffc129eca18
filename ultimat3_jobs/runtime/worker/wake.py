"""The worker's wake: its subscription, and what a wake or a hand does to the claim loop.

A wake for one of the worker's queues ends the loop's idle wait at once. A hand (Redis: an
enqueue that claimed its job for this idle worker, ``drivers/redis/wake.py``) is a job the
worker holds as one its own claim took (a stopping worker gives it back): ``take`` starts it,
and the loop's next pass claims (and lists the worker idle again when that claim finds
nothing). The loop is woken for that pass once the handed body's thread runs (at once when the
job could not start): woken with the hand, its claim held the interpreter (the GIL) while that
thread waited to start the body, on the wake's own path. A worker with a per-process limiter
takes no hands: its limiter plans every claim.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from ultimat3_jobs.drivers.base import JobDriver, WakeSubscription
from ultimat3_jobs.runtime.common.backoff import IdleBackoff
from ultimat3_jobs.runtime.worker.config import WorkerConfig
from ultimat3_jobs.types import ClaimedJob


@dataclass(slots=True, eq=False)
class WorkerWake:
    """Subscribes once (:meth:`subscribe`), wakes the loop through ``signal``; ``take``
    starts a hand's job (``None``: the worker takes no hands)."""

    driver: JobDriver
    config: WorkerConfig
    signal: threading.Event
    backoff: IdleBackoff
    take: Callable[[ClaimedJob], bool] | None
    _subscription: WakeSubscription | None = field(default=None, init=False)

    @property
    def live(self) -> bool:
        return self._subscription is not None and self._subscription.is_live()

    def subscribe(self) -> None:
        """Subscribe, unless subscribed already or the config turns the wake off."""
        if self._subscription is not None or not self.config.use_wake:
            return
        self._subscription = self.driver.wake_subscribe(
            on_wake=self._on_wake,
            worker_id=self.config.worker_id,
            on_hand=None if self.take is None else self._on_hand,
        )

    def close(self) -> None:
        """Stop the wakes and hands; none is delivered once this returns."""
        if self._subscription is not None:
            self._subscription.close()

    def _on_wake(self, queue: str) -> None:
        if queue in self.config.queues:
            self.backoff.reset()
            self.signal.set()

    def _on_hand(self, job: ClaimedJob) -> None:
        assert self.take is not None
        self.backoff.reset()
        if not self.take(job):  # else its body's thread wakes the loop (Attempt.on_begin)
            self.signal.set()
