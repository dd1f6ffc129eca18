"""``Scheduler``: leader election, the dispatch round, catch-up, and an idle loop that touches
the store only to renew its lease.

Only the leader fires. It keeps each cron's watermark and next occurrence in memory while it
leads and fires each occurrence in one statement fenced by the old watermark and by its lease
epoch, so two leaders (or an ex-leader waking late) can never fire one occurrence twice. Time is
the store's: the lease statement answers the database's ``now()``, and the scheduler tracks it
with a monotonic clock from there.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import ClassVar

import ultimat3_jobs.conf as conf
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.model.cron import Schedule, idempotency_key
from ultimat3_jobs.model.definitions import JobDefinition
from ultimat3_jobs.model.options import EnqueueOptions
from ultimat3_jobs.model.registry import Registry
from ultimat3_jobs.model.registry import registry as default_registry
from ultimat3_jobs.model.requests import build_request
from ultimat3_jobs.runtime.common.config import FieldSource, FromSettings
from ultimat3_jobs.runtime.common.ids import default_worker_id
from ultimat3_jobs.runtime.common.service import Service
from ultimat3_jobs.runtime.common.store import STORE_ERRORS
from ultimat3_jobs.types import CRON_SCOPE, CronState

logger = logging.getLogger("ultimat3_jobs.scheduler")

LEADER_NAME = "scheduler"
PAUSED_RECHECK_SECONDS = 10.0


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerConfig(FromSettings):
    """One scheduler process. ``renew_interval`` defaults to a third of the lease."""

    scheduler_id: str = field(default_factory=lambda: f"scheduler:{default_worker_id()}")
    lease_seconds: float = conf.SCHEDULER_LEASE_SECONDS_DEFAULT
    renew_interval: float | None = None
    missed_after: float = conf.SCHEDULER_MISSED_AFTER_SECONDS_DEFAULT

    @property
    def renew_every(self) -> float:
        return self.renew_interval if self.renew_interval is not None else self.lease_seconds / 3

    SETTINGS: ClassVar[Mapping[str, FieldSource]] = {
        "lease_seconds": "scheduler_lease_seconds",
        "missed_after": "scheduler_missed_after_seconds",
    }


@dataclass(slots=True)
class _Known:
    definition: JobDefinition
    schedule: Schedule
    watermark: datetime
    next_due: datetime
    paused_until: float = 0.0


def plan(
    schedule: Schedule, occurrences: list[datetime], now: datetime, missed_after: float
) -> list[tuple[datetime, bool]]:
    """What to do with the occurrences due since the watermark: ``(occurrence, dispatch)``
    steps, oldest first. An occurrence older than ``missed_after`` seconds was missed, and the
    cron's catch-up policy decides about those; the others fire.

    ``skip`` fires the latest occurrence due and skips the missed ones before it: the latest
    missed one fires when no recent one follows it. ``run-once`` fires the latest missed one
    whatever follows it."""
    horizon = now - timedelta(seconds=missed_after)
    missed = [o for o in occurrences if o < horizon]
    recent = [o for o in occurrences if o >= horizon]
    steps: list[tuple[datetime, bool]] = []
    if missed:
        if schedule.catch_up == "skip":
            steps.append((missed[-1], not recent))
        elif schedule.catch_up == "run-once":
            steps.append((missed[-1], True))
        else:
            kept = missed[-schedule.max_catch_up :]
            if len(kept) < len(missed):
                steps.append((missed[-len(kept) - 1], False))
            steps.extend((o, True) for o in kept)
    steps.extend((o, True) for o in recent)
    return steps


class Scheduler(Service[SchedulerConfig]):
    """Runs until stopped. Tests wait on ``leading`` (this process took the lease), ``fired``
    (a round dispatched a job) and ``stopped``."""

    def __init__(
        self, driver: JobDriver, config: SchedulerConfig, *, registry: Registry | None = None
    ) -> None:
        super().__init__(driver, config)
        self.registry = registry or default_registry
        self.leading = threading.Event()
        self.fired = threading.Event()
        self.fire_count = 0
        self._stop = threading.Event()
        self._epoch: int | None = None
        self._lease_until = 0.0
        self._renew_at = 0.0
        self._store_offset = timedelta(0)
        self._known: dict[str, _Known] = {}
        self._crons: list[JobDefinition] = []

    def request_stop(self, *, reason: str = "stop requested") -> None:
        """Stop after the round in hand; a leader resigns so a follower takes over at once."""
        logger.info("jobs.scheduler.stopping: %s", reason)
        self._stop.set()

    def store_now(self) -> datetime:
        """The store's clock, as tracked since the last lease statement."""
        return datetime.now().astimezone() + self._store_offset

    def _open(self) -> None:
        self._crons = self.registry.crons()
        logger.info(
            "jobs.scheduler.started: %s with %s cron(s)",
            self.config.scheduler_id,
            len(self._crons),
        )

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                if time.monotonic() >= self._renew_at:
                    self._elect(self._crons)
                if self._epoch is not None:
                    self._round()
            except STORE_ERRORS as exc:
                logger.warning("jobs.scheduler.store_failed: %s; retrying", exc)
                self.driver.reset_connection()
                self._lose("the store failed")
                self._renew_at = time.monotonic() + 1.0
            self._stop.wait(self._sleep_for())

    def _close(self) -> None:
        if self._epoch is not None:
            try:
                self.driver.leader_resign(name=LEADER_NAME, holder=self.config.scheduler_id)
            except STORE_ERRORS as exc:
                logger.warning("jobs.scheduler.resign_failed: %s", exc)
        self.leading.clear()

    # -- leadership --------------------------------------------------------------------------

    def _elect(self, crons: list[JobDefinition]) -> None:
        asked = time.monotonic()
        lease = self.driver.leader_attempt_elect(
            name=LEADER_NAME, holder=self.config.scheduler_id, ttl_seconds=self.config.lease_seconds
        )
        self._renew_at = asked + self.config.renew_every
        if lease is None:
            self._lose("another scheduler leads")
            return
        self._store_offset = lease.store_now - datetime.now().astimezone()
        # Trust the lease a little less than it lasts: the statement's round trip is unknown.
        self._lease_until = asked + self.config.lease_seconds * 0.9
        if self._epoch != lease.epoch:
            self._epoch = lease.epoch
            self._sync(crons)
            logger.info(
                "jobs.scheduler.leading: %s (epoch %s)", self.config.scheduler_id, lease.epoch
            )
            self.leading.set()

    def _lose(self, why: str) -> None:
        if self._epoch is not None:
            logger.info("jobs.scheduler.following: %s; %s", self.config.scheduler_id, why)
        self._epoch = None
        self._known.clear()
        self.leading.clear()

    def _sync(self, crons: list[JobDefinition]) -> None:
        states = self.driver.scheduler_cron_sync(names=[d.name for d in crons])
        self._known = {}
        for definition in crons:
            assert definition.schedule is not None
            self._remember(definition, definition.schedule, states[definition.name])

    def _remember(self, definition: JobDefinition, schedule: Schedule, state: CronState) -> None:
        self._known[definition.name] = _Known(
            definition=definition,
            schedule=schedule,
            watermark=state.watermark,
            next_due=schedule.next_after(state.watermark),
        )

    # -- the dispatch round ------------------------------------------------------------------

    def _round(self) -> None:
        if time.monotonic() >= self._lease_until:
            self._lose("the lease was not renewed in time")
            return
        now = self.store_now()
        mono = time.monotonic()
        due = [k for k in self._known.values() if k.next_due <= now and k.paused_until <= mono]
        if not due:
            return
        paused = {p.target for p in self.driver.pause_list() if p.scope == CRON_SCOPE}
        for known in due:
            if self._stop.is_set() or self._epoch is None:
                return
            if known.definition.name in paused:
                known.paused_until = mono + PAUSED_RECHECK_SECONDS
                continue
            self._dispatch(known, now)

    def _due_occurrences(self, known: _Known, now: datetime) -> list[datetime]:
        """The occurrences since the watermark that the catch-up policy can use: every recent
        one, and only as many missed ones as it needs (after a long outage a per-second cron
        has millions; walking them all would outlast the lease)."""
        schedule, after = known.schedule, known.watermark
        horizon = now - timedelta(seconds=self.config.missed_after)
        need = schedule.max_catch_up + 1 if schedule.catch_up == "all" else 1
        span = timedelta(minutes=10)
        while True:
            start = max(after, horizon - span)
            found = schedule.occurrences(start, now)
            if start == after or sum(1 for o in found if o < horizon) >= need:
                return found
            span *= 4

    def _dispatch(self, known: _Known, now: datetime) -> None:
        occurrences = self._due_occurrences(known, now)
        for occurrence, dispatch in plan(
            known.schedule, occurrences, now, self.config.missed_after
        ):
            name = known.definition.name
            request = build_request(
                known.definition,
                {},
                # The scheduler fires for no tenant (a cron job declares tenant="none").
                EnqueueOptions(idempotency_key=idempotency_key(name, occurrence), tenant=None),
            )
            assert self._epoch is not None
            result = self.driver.scheduler_fire(
                cron=name,
                old_watermark=known.watermark,
                occurrence=occurrence,
                dispatch=dispatch,
                request=request,
                leader=LEADER_NAME,
                holder=self.config.scheduler_id,
                epoch=self._epoch,
            )
            if not result.moved:
                # Another leader moved it, or our lease is gone: stop and re-elect.
                logger.warning(
                    "jobs.scheduler.fence: %s at %s did not move; re-electing", name, occurrence
                )
                self._lose("a fire was fenced out")
                self._renew_at = 0.0
                return
            known.watermark = occurrence
            if dispatch and result.job_id is not None:
                self.fire_count += 1
                self.fired.set()
                logger.info(
                    "jobs.scheduler.fired: %s for %s as %s", name, occurrence, result.job_id
                )
            elif not dispatch:
                logger.info("jobs.scheduler.skipped: %s through %s (catch-up)", name, occurrence)
        known.next_due = known.schedule.next_after(known.watermark)

    def _sleep_for(self) -> float:
        wait = max(0.0, self._renew_at - time.monotonic())
        if self._epoch is not None:
            now, mono = self.store_now(), time.monotonic()
            for known in self._known.values():
                if known.paused_until > mono:
                    wait = min(wait, known.paused_until - mono)
                else:
                    wait = min(wait, max(0.0, (known.next_due - now).total_seconds()))
        return wait
