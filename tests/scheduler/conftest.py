"""Scheduler tests run real Schedulers on threads against the real database (commits matter),
and read what they fired back from ``x_jobs`` and ``x_scheduler_tasks``."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection

from ultimat3_jobs import cron as cron_job
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.model.definitions import JobHandle
from ultimat3_jobs.model.registry import Registry, registry
from ultimat3_jobs.runtime.scheduler import Scheduler, SchedulerConfig
from ultimat3_jobs.runtime.scheduler.scheduler import LEADER_NAME

FAST_LEASE = 3.0
"""A lease short enough for failovers to play out in seconds (renewed every second)."""

EVERY_SECOND = "tests.every_second"


class RunningScheduler:
    """A Scheduler on its own thread, stopped (and joined) by the fixture."""

    def __init__(self, scheduler: Scheduler, thread_name: str) -> None:
        self.scheduler = scheduler
        self.code: int | None = None
        self.thread = threading.Thread(target=self._run, name=thread_name, daemon=True)

    def _run(self) -> None:
        self.code = self.scheduler.run()

    @property
    def id(self) -> str:
        return self.scheduler.config.scheduler_id

    @property
    def leading(self) -> bool:
        return self.scheduler.leading.is_set()

    def start(self) -> RunningScheduler:
        self.thread.start()
        assert self.scheduler.started.wait(10), f"{self.id} did not start"
        return self

    def stop(self, timeout: float = 15) -> int | None:
        if self.thread.is_alive():
            self.scheduler.request_stop(reason="test finished")
        self.thread.join(timeout)
        assert not self.thread.is_alive(), f"{self.id} did not stop"
        return self.code


@pytest.fixture
def make_scheduler(transactional_db: None) -> Iterator[Callable[..., RunningScheduler]]:
    """``make_scheduler(scheduler_id, registry=..., **SchedulerConfig options)``; every one
    started is stopped at teardown, before the tables are flushed."""
    started: list[RunningScheduler] = []

    def make(
        scheduler_id: str,
        *,
        registry: Registry | None = None,
        start: bool = True,
        thread_name: str | None = None,
        **options: Any,
    ) -> RunningScheduler:
        options.setdefault("lease_seconds", FAST_LEASE)
        # The tests reason in minutes of missed occurrences: a 60 s horizon (the scheduler's
        # own default is 300 s, at least twice its lease).
        options.setdefault("missed_after", 60.0)
        config = SchedulerConfig(scheduler_id=scheduler_id, **options)
        running = RunningScheduler(
            Scheduler(PostgresDriver(), config, registry=registry),
            thread_name or f"test-scheduler-{scheduler_id}",
        )
        started.append(running)
        return running.start() if start else running

    yield make
    for running in started:
        running.stop()


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.threadName}: {record.getMessage()}")


_SCHEDULER_LOG = _Lines()


@pytest.fixture(autouse=True)
def scheduler_log() -> Iterator[list[str]]:
    """Every line the scheduler logged during the test, with its thread's name."""
    log = logging.getLogger("ultimat3_jobs.scheduler")
    _SCHEDULER_LOG.lines = []
    level = log.level
    log.setLevel(logging.INFO)
    log.addHandler(_SCHEDULER_LOG)
    yield _SCHEDULER_LOG.lines
    log.removeHandler(_SCHEDULER_LOG)
    log.setLevel(level)


def fire_diagnosis(jobs: list[Any]) -> str:
    """Why the schedulers' fire counts and the stored jobs disagree: the fired ids the store
    does not hold (and whether any row has that id), the scheduler's log, the live threads."""
    from ultimat3_jobs.models import Job

    stored = {str(job.id) for job in jobs} | {
        str(i)
        for i in Job.objects.filter(idempotency_key__startswith="task:").values_list(
            "id", flat=True
        )
    }
    fired_ids = [line.rsplit(" as ", 1)[1] for line in _SCHEDULER_LOG.lines if ".fired:" in line]
    missing = [i for i in fired_ids if i not in stored]
    rows = list(Job.objects.filter(id__in=missing).values_list("id", "name", "state"))
    threads = [t.name for t in threading.enumerate()]
    log = "\n".join(_SCHEDULER_LOG.lines)
    return f"missing {missing}; rows with those ids {rows}; threads {threads}\n{log}"


# -- tasks outside the project's registry -----------------------------------------------------


def _task_body(ctx: Any) -> None:
    """The body of every task these tests declare (a fired job is never run here)."""


def make_task(name: str, cron: str, *, tz: str = "UTC", **options: Any) -> JobHandle:
    """Declare a task for one test only: declared (and checked) by ``@cron``, then taken out of
    the project's registry again, so that only a Scheduler given it knows it."""
    handle = cron_job(name=name, cron=cron, tz=tz, tenant="none", **options)(_task_body)
    registry.unregister(name)
    return handle


def registry_of(*handles: JobHandle) -> Registry:
    own = Registry()
    for handle in handles:
        own.register(handle)
    return own


# -- reading the store ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Fired:
    """One job a scheduler fired, as ``x_jobs`` holds it."""

    id: Any
    key: str
    occurrence: datetime
    created_at: datetime
    run_at: datetime
    state: str


def occurrence_of(key: str, name: str) -> datetime:
    """The occurrence in a fired job's key ``task:<epoch seconds>:<name>``."""
    prefix, seconds, rest = key.split(":", 2)
    assert (prefix, rest) == ("task", name), key
    return datetime.fromtimestamp(int(seconds), UTC)


def fired(name: str) -> list[Fired]:
    """The jobs of ``name``, oldest occurrence first."""
    from ultimat3_jobs.models import Job

    rows = Job.objects.filter(name=name).values_list(
        "id", "idempotency_key", "created_at", "run_at", "state"
    )
    jobs = [
        Fired(id, key, occurrence_of(key, name), created, run_at, state)
        for id, key, created, run_at, state in rows
    ]
    return sorted(jobs, key=lambda job: job.occurrence)


def cron_jobs_count() -> int:
    """The jobs any cron job's fire stored (their keys are ``task:<seconds>:<name>``): what
    a scheduler's ``fire_count`` counts, whichever cron jobs the registry holds (the project's
    registry holds more than ``tests.every_second``: the test apps' cron and consumer jobs)."""
    from ultimat3_jobs.models import Job

    return Job.objects.filter(idempotency_key__startswith="task:").count()


def occurrences(name: str) -> list[datetime]:
    return [job.occurrence for job in fired(name)]


def task_row(name: str) -> Any:
    from ultimat3_jobs.models import SchedulerTask

    return SchedulerTask.objects.filter(name=name).first()


def set_watermark(name: str, when: datetime) -> None:
    """Make the task known to the store, then move its watermark to ``when`` (as if no
    scheduler had run since)."""
    from ultimat3_jobs.models import SchedulerTask

    PostgresDriver().scheduler_cron_sync(names=[name])
    assert SchedulerTask.objects.filter(name=name).update(watermark=when) == 1


def leader_row() -> Any:
    from ultimat3_jobs.models import SchedulerLeader

    return SchedulerLeader.objects.filter(name=LEADER_NAME).first()


def db_now() -> datetime:
    with connection.cursor() as cursor:
        cursor.execute("select clock_timestamp()")
        return cursor.fetchone()[0]


def gaps_and_repeats(instants: list[datetime]) -> tuple[list[datetime], list[datetime]]:
    """For a per-second task: the seconds missing between the first and last occurrence, and
    the occurrences that appear more than once."""
    seen: set[int] = set()
    repeats = []
    for instant in instants:
        second = int(instant.timestamp())
        if second in seen:
            repeats.append(instant)
        seen.add(second)
    if not seen:
        return [], repeats
    missing = [
        datetime.fromtimestamp(s, UTC) for s in range(min(seen), max(seen) + 1) if s not in seen
    ]
    return missing, repeats
