"""Cron schedules in a time zone: which instants a cron's occurrences fall on.

Layer L3 (job model). Occurrences are computed on the local wall clock of the cron's zone and
then placed on the UTC timeline:

* a local time that does not exist (the clock jumps forward over it) runs once, shifted forward
  by the jump: a 02:30 occurrence on a night that skips 02:00-03:00 runs at 03:30;
* a local time that happens twice (the clock falls back over it) runs once, at its first
  occurrence.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from ultimat3_jobs.errors import JobDeclarationInvalid
from ultimat3_jobs.values import whole_number

CatchUp = Literal["skip", "run-once", "all"]
CATCH_UP_POLICIES: tuple[CatchUp, ...] = ("skip", "run-once", "all")
MAX_CATCH_UP_DEFAULT = 100
MAX_CATCH_UP_LIMIT = 10_000
SCAN_LIMIT = 1_000_000
"""At most this many occurrences are kept in one answer (the most recent); the scheduler asks
only for the span its catch-up policy needs, so it never walks a long outage whole."""


@dataclass(frozen=True, slots=True)
class Schedule:
    """``cron`` (5 fields, or 6 with seconds last) in the IANA zone ``tz``, with what to do
    about occurrences missed while no scheduler ran: ``skip`` them but the latest, which fires
    unless a recent occurrence follows it; fire ``run-once`` for all of them (the latest); or
    fire ``all`` of them (at most ``max_catch_up``, the most recent)."""

    cron: str
    tz: str
    catch_up: CatchUp = "skip"
    max_catch_up: int = MAX_CATCH_UP_DEFAULT

    def check(self, name: str) -> None:
        """Refuse a bad schedule, naming the cron and what is wrong with it."""
        if not isinstance(self.tz, str) or not self.tz:
            raise JobDeclarationInvalid(
                f"cron {name!r}: tz must be an IANA time zone name such as 'Europe/Paris' or "
                f"'UTC'; got {self.tz!r}"
            )
        try:
            ZoneInfo(self.tz)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise JobDeclarationInvalid(
                f"cron {name!r}: tz {self.tz!r} is not a known time zone ({exc})"
            ) from None
        if not isinstance(self.cron, str) or not croniter.is_valid(self.cron):
            raise JobDeclarationInvalid(
                f"cron {name!r}: cron {self.cron!r} is not a valid cron expression (5 fields: "
                "minute hour day month weekday, or 6 with seconds last)"
            )
        try:
            self.next_after(datetime.now(UTC))
        except Exception as exc:  # croniter's "no date matches" and its kin
            raise JobDeclarationInvalid(
                f"cron {name!r}: cron {self.cron!r} never fires ({exc})"
            ) from None
        if self.catch_up not in CATCH_UP_POLICIES:
            raise JobDeclarationInvalid(
                f"cron {name!r}: catch_up must be one of {', '.join(CATCH_UP_POLICIES)}; "
                f"got {self.catch_up!r}"
            )
        limit = self.max_catch_up
        if not whole_number(limit, 1, MAX_CATCH_UP_LIMIT):
            raise JobDeclarationInvalid(
                f"cron {name!r}: max_catch_up must be an integer from 1 to {MAX_CATCH_UP_LIMIT}; "
                f"got {limit!r}"
            )

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.tz)

    def _instant(self, local: datetime) -> datetime:
        # fold=0 places a repeated time at its first occurrence and a skipped one after the gap.
        return local.replace(tzinfo=self.zone, fold=0).astimezone(UTC)

    def next_after(self, after: datetime) -> datetime:
        """The first occurrence strictly after the instant ``after``."""
        local = after.astimezone(self.zone).replace(tzinfo=None)
        walker = croniter(self.cron, local)
        while True:
            instant = self._instant(walker.get_next(datetime))
            if instant > after:
                return instant

    def occurrences(self, after: datetime, until: datetime) -> list[datetime]:
        """Occurrences strictly after ``after`` and at or before ``until``, oldest first; when
        there are more than :data:`SCAN_LIMIT`, only the most recent ones."""
        if until <= after:
            return []
        local = after.astimezone(self.zone).replace(tzinfo=None)
        walker = croniter(self.cron, local)
        found: collections.deque[datetime] = collections.deque(maxlen=SCAN_LIMIT)
        last = after
        while True:
            instant = self._instant(walker.get_next(datetime))
            # A time shifted past a gap can land on the next occurrence's instant: once only.
            if instant <= last:
                continue
            if instant > until:
                return list(found)
            found.append(instant)
            last = instant


def idempotency_key(name: str, occurrence: datetime) -> str:
    """The occurrence-scoped key of a fired cron: ``task:<epoch seconds>:<name>``. The prefix is
    a stored and documented value, so it keeps its old word."""
    return f"task:{int(occurrence.timestamp())}:{name}"
