"""One claimed attempt as the worker tracks it, and how it ended."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Literal

from ultimat3_jobs.context import JobContext
from ultimat3_jobs.definitions import JobDefinition
from ultimat3_jobs.types import AttemptError, ClaimedJob

OutcomeKind = Literal["completed", "failed", "lost"]


@dataclass(slots=True, eq=False)
class Attempt:
    """A running attempt. Several threads touch it (the body's, the settler, maintenance); the
    one rule is :meth:`take_settle`: only the thread that wins it writes the settle."""

    job: ClaimedJob
    definition: JobDefinition | None
    ctx: JobContext
    started: float = field(default_factory=time.monotonic)
    deadline: float | None = None
    grace_deadline: float | None = None
    timed_out: bool = False
    lost: bool = False
    pending_progress: str | None = None
    """The body's last progress (JSON text) not stored yet: the heartbeat, or else the settle,
    stores it through the worker's own connection."""
    holds_slot: bool = True
    """Until its body returns (or is abandoned): a slot is free again before the ack lands."""
    _settle_taken: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def take_settle(self) -> bool:
        """Claim the right to settle this attempt; True exactly once."""
        with self._lock:
            if self._settle_taken:
                return False
            self._settle_taken = True
            return True

    def set_progress(self, text: str) -> None:
        with self._lock:
            self.pending_progress = text

    def take_progress(self) -> str | None:
        """The pending progress, now in the caller's hands (``None`` when there is none)."""
        with self._lock:
            text, self.pending_progress = self.pending_progress, None
            return text

    def untake_progress(self, text: str) -> None:
        """A taken progress that was not stored: pending again, unless a newer one came."""
        with self._lock:
            if self.pending_progress is None:
                self.pending_progress = text

    @property
    def settle_taken(self) -> bool:
        return self._settle_taken

    def lose(self) -> None:
        """The lease is gone (cancelled, rescued, settled elsewhere): stop and write nothing."""
        self.lost = True
        self.ctx.cancelled.set()


@dataclass(frozen=True, slots=True)
class Outcome:
    """How an attempt's body ended. ``terminal`` failures are not retried."""

    attempt: Attempt
    kind: OutcomeKind
    result_json: str = "null"
    error: AttemptError | None = None
    terminal: bool = False
