"""The seam's retention deletes: :class:`RetentionMethods`, which :class:`JobDriver` inherits.

Layer L2 (the seam), like ``drivers/steps_seam.py``: imports L1 only. Every driver implements
these methods and passes ``tests/drivers/test_retention.py``. The only caller is the ``purge``
factory (``ultimat3_jobs/factories/purge.py``), and ``jobs purge --dry-run`` for the counts.

Rules every driver keeps:

* **One clock per pass.** A pass reads the store's clock once (:meth:`clock_now`) and hands
  every delete an absolute cutoff (``before``), so the targets of one pass agree on what "old"
  means, and a replayed pass deletes by the same cutoff.
* **Bounded.** A delete touches at most ``limit`` rows, oldest first, and skips rows another
  transaction holds: the caller loops, never one huge ``DELETE``.
* **Never a live row.** A finished-job delete reads only the state it is given, which must be a
  finished one (``completed``, ``failed``, ``cancelled``); a job's steps go with it.
"""

from __future__ import annotations

import abc
from datetime import datetime
from typing import ClassVar

from ultimat3_jobs.errors import StoreRefused
from ultimat3_jobs.types import FINISHED_STATES, JobState
from ultimat3_jobs.values import whole_number

PURGE_LIMIT_MAX = 10_000
"""The most rows one retention delete may touch: one statement stays short."""


def check_finished_state(state: JobState | str) -> JobState:
    """The finished state named, or :class:`~ultimat3_jobs.errors.StoreRefused` naming the
    rule: a retention delete never reads a live state."""
    try:
        found = JobState(state)
    except ValueError:
        found = None
    if found not in FINISHED_STATES:
        allowed = ", ".join(sorted(s.value for s in FINISHED_STATES))
        raise StoreRefused(f"state must be a finished state ({allowed}); got {state!r}")
    assert found is not None
    return found


def check_purge_limit(limit: int) -> int:
    """``limit`` as an int from 0 to :data:`PURGE_LIMIT_MAX`, or :class:`StoreRefused`."""
    if not whole_number(limit, 0, PURGE_LIMIT_MAX):
        raise StoreRefused(f"limit must be an integer from 0 to {PURGE_LIMIT_MAX}; got {limit!r}")
    return limit


class RetentionMethods(abc.ABC):
    """Deletes past a retention, and their counts for a dry run. Named ``noun_verb`` like the
    rest of the seam; every argument is keyword-only."""

    has_retention: ClassVar[bool] = True
    """Whether the store can purge finished rows (the purge factory's targets). A driver
    without it answers ``False`` here and refuses each method with
    :class:`~ultimat3_jobs.errors.DriverCapabilityMissing`."""

    @abc.abstractmethod
    def clock_now(self) -> datetime:
        """The store's clock (PostgreSQL's ``now()``), read once per purge pass."""

    @abc.abstractmethod
    def job_purge_finished(self, *, state: JobState | str, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` jobs in the finished ``state`` that finished before
        ``before``, oldest first, with their steps; rows another transaction holds are skipped.
        Answers how many. A live state is refused (:class:`StoreRefused`)."""

    @abc.abstractmethod
    def job_count_finished(self, *, state: JobState | str, before: datetime, limit: int) -> int:
        """How many jobs :meth:`job_purge_finished` would delete with no limit, counted up to
        ``limit``."""

    @abc.abstractmethod
    def event_count_expired(self, *, before: datetime, limit: int) -> int:
        """How many events expired at or before ``before``, counted up to ``limit`` (what
        ``events_purge_expired(before=...)`` would delete)."""

    @abc.abstractmethod
    def counter_purge(self, *, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` settle-counter rows (either period) whose bucket starts
        before ``before``, oldest first. Answers how many."""

    @abc.abstractmethod
    def counter_count(self, *, before: datetime, limit: int) -> int:
        """How many counter rows :meth:`counter_purge` would delete, counted up to ``limit``."""
