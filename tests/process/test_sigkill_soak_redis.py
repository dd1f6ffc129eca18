"""SIGKILL soak on the Redis driver: two busy ``jobs_worker`` processes on a Redis job store are
SIGKILLed mid-job again and again and restarted; nothing is lost, nothing runs again after its
settle landed, nothing is left running.

The workers run ``tests.record_quick_retry`` (a sleep of some milliseconds, then an effect row
in the project's database, then a result naming its attempt). Every ``KILL_EVERY`` seconds the
busier worker is SIGKILLed and a replacement started, until ``kills`` kills have caught jobs in
flight (a kill that lands between a settle and the next claim catches none and is not counted);
the backlog is topped up until then, and to at least ``jobs`` jobs. At the end, read from Redis
and from the effect rows:

* 0 lost: every job enqueued ended ``completed``;
* 0 run twice after a settle landed: no attempt ran its body twice, no attempt later than the
  completing one ran at all, the stored result is the completing attempt's, and the
  ``completed`` counter equals the completed jobs;
* 0 left ``running``;
* each job caught by a kill was rescued (its ``LeaseExpired`` entry written) within lease +
  rescue interval + 5 s of it, by Redis's clock: its lease ends at most a lease after the kill
  (a beat renews it to now + lease), and a live worker's rescue looks every rescue interval.
  Its settle after that is not bounded here: the retried job is due after the jobs enqueued
  before its rescue (the claim order is by due time), and the run tops the backlog up to
  ``jobs`` after the last kill, so it waits behind up to that many jobs on a loaded host.

The unmarked run is small (``ULTIMAT3_REDIS_SOAK_JOBS``/``_KILLS``, default 60 jobs, 2 kills);
``-m slow`` runs 600 jobs and 6 kills (``ULTIMAT3_REDIS_SOAK_JOBS_SLOW``/``_KILLS_SLOW``).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.conf import settings

from tests.drivers.conftest import NO_REDIS, drop_redis_store
from tests.process.conftest import WorkerProcess, Workers
from tests.settings_process import PROCESS_TIMINGS
from tests.support.processes import owned
from tests.testapp.models import Effect
from ultimat3_jobs.drivers.redis import RedisDriver
from ultimat3_jobs.types import EnqueueRequest, JobState, new_job_id

pytestmark = [
    pytest.mark.process,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not settings.REDIS_URL, reason=NO_REDIS),
]

LEASE = float(PROCESS_TIMINGS["VISIBILITY_TIMEOUT_SECONDS"])
RESCUE = float(PROCESS_TIMINGS["RESCUE_INTERVAL_SECONDS"])
RESCUE_BOUND = LEASE + RESCUE + 5.0

WORKERS = 2
CONCURRENCY = 3
KILL_EVERY = 1.5
FIRST_WAVE = 40
BACKLOG_LOW = 30
WAVE = 30
JOB = "tests.record_quick_retry"
LEASE_EXPIRED = "ultimat3_jobs.LeaseExpired"
MAX_ATTEMPTS = 6
"""Retries of a job killed more than once are not failures: room beyond the default 3."""


def _size(name: str, default: int) -> int:
    return int(os.environ.get(name) or default)


class RedisWorkers(Workers):
    """``jobs_worker`` subprocesses whose job store is Redis (``tests.settings_process_redis``);
    the project's database still takes their bodies' effect rows."""

    def __init__(self, tmp_path: Path, driver: RedisDriver) -> None:
        super().__init__(tmp_path)
        self.settings = "tests.settings_process_redis"
        self.driver = driver

    def wait_registered(self, *processes: WorkerProcess, timeout: float = 60) -> None:
        ids = {p.worker_id for p in processes}
        self.wait(
            lambda: ids <= {worker.id for worker in self.driver.worker_list()},
            timeout=timeout,
            what=f"workers {sorted(ids)} registered in Redis",
        )


@pytest.fixture
def redis_jobs() -> Iterator[RedisDriver]:
    """The store the subprocesses use (the ``redis`` alias, the default prefix), emptied before
    and after."""
    driver = RedisDriver(alias="redis")
    drop_redis_store(driver)
    yield driver
    driver.close()
    drop_redis_store(driver)


@pytest.fixture
def redis_workers(
    transactional_db: None, tmp_path: Path, redis_jobs: RedisDriver
) -> Iterator[RedisWorkers]:
    # Requested after redis_jobs, so torn down first: every worker is dead before the store goes.
    yield from owned(RedisWorkers(tmp_path, redis_jobs))  # type: ignore[misc]


@dataclass
class Kill:
    worker_id: str
    at: datetime
    """Redis's clock right after the process was reaped."""
    in_flight: list[uuid.UUID]


def _redis_now(driver: RedisDriver) -> datetime:
    seconds, micros = driver.redis().time()
    return datetime.fromtimestamp(int(seconds) + int(micros) / 1_000_000, UTC)


def _running(driver: RedisDriver) -> list[tuple[uuid.UUID, str | None]]:
    found: list[tuple[uuid.UUID, str | None]] = []
    after = None
    while True:
        page = driver.job_list(states=["running"], after=after, limit=500)
        found += [(job.id, job.worker_id) for job in page.jobs]
        if page.next_cursor is None:
            return found
        after = page.next_cursor


def _queued(driver: RedisDriver) -> int:
    return sum(stats.jobs for stats in driver.queue_stats() if stats.state is JobState.QUEUED)


def _settled(driver: RedisDriver, ids: list[uuid.UUID]) -> bool:
    for job_id in ids:
        record = driver.job_get(job_id=job_id)
        if record is not None and record.state in (JobState.QUEUED, JobState.RUNNING):
            return False
    return True


def _rescued_at(errors: list[dict[str, object]], after: datetime) -> datetime | None:
    """When the first rescue at or after ``after`` wrote its ``LeaseExpired`` entry."""
    for entry in errors:
        if entry.get("error_class") == LEASE_EXPIRED:
            at = datetime.fromisoformat(str(entry["at"]))
            if at >= after:
                return at
    return None


def _soak(workers: RedisWorkers, *, jobs: int, kills: int, seed: int) -> None:
    driver = workers.driver
    rng = random.Random(seed)
    numbers = itertools.count()

    def wave(size: int) -> list[uuid.UUID]:
        requests = [
            EnqueueRequest(
                id=new_job_id(),
                name=JOB,
                queue="default",
                input_json=json.dumps(
                    {"n": next(numbers), "sleep": round(rng.uniform(0.01, 0.04), 4)}
                ),
                max_attempts=MAX_ATTEMPTS,
            )
            for _ in range(size)
        ]
        driver.job_enqueue_many(requests=requests)
        return [request.id for request in requests]

    ids = wave(min(FIRST_WAVE, jobs))
    generation = itertools.count()
    live = [
        workers.start(f"rsoak-{next(generation)}", concurrency=CONCURRENCY) for _ in range(WORKERS)
    ]
    workers.wait_registered(*live)

    done: list[Kill] = []
    next_kill = time.monotonic() + KILL_EVERY
    give_up = time.monotonic() + 60.0 + 15.0 * kills
    while sum(1 for kill in done if kill.in_flight) < kills:
        workers.check_started()
        if time.monotonic() > give_up:
            pytest.fail(f"only {len(done)} kills in time\n{workers.report()}")
        if _queued(driver) < BACKLOG_LOW:
            ids += wave(WAVE)
        if time.monotonic() < next_kill:
            time.sleep(0.05)
            continue
        holding = Counter(worker for _, worker in _running(driver))
        victim = max(live, key=lambda process: holding.get(process.worker_id, 0))
        if not holding.get(victim.worker_id):
            time.sleep(0.05)  # no worker holds a job this instant; look again
            continue
        victim.signal(signal.SIGKILL)
        victim.wait(10)
        at = _redis_now(driver)
        in_flight = [job_id for job_id, worker in _running(driver) if worker == victim.worker_id]
        done.append(Kill(victim.worker_id, at, in_flight))
        live.remove(victim)
        live.append(workers.start(f"rsoak-{next(generation)}", concurrency=CONCURRENCY))
        next_kill = time.monotonic() + KILL_EVERY
    if len(ids) < jobs:
        ids += wave(jobs - len(ids))

    workers.wait(
        lambda: _settled(driver, ids), timeout=120, what=f"all {len(ids)} jobs settled", poll=0.2
    )
    assert all(process.alive() for process in live), workers.report()

    records = {job_id: driver.job_get(job_id=job_id) for job_id in ids}
    states = Counter(None if r is None else r.state.value for r in records.values())
    effects: dict[uuid.UUID, Counter[int]] = {}
    for job_id, attempt in Effect.objects.filter(job_id__in=ids).values_list("job_id", "attempt"):
        effects.setdefault(job_id, Counter())[attempt] += 1
    problems = []
    if states.get("completed", 0) != len(ids):
        problems.append(f"lost: states {dict(states)} of {len(ids)} jobs")
    if states.get("running"):
        problems.append(f"{states['running']} left running")
    counter = sum(t.completed for t in driver.counter_total() if t.name == JOB)
    if counter != states.get("completed", 0):
        problems.append(f"completed counter {counter} != {states.get('completed', 0)} completed")
    for job_id, record in records.items():
        if record is None or record.state is not JobState.COMPLETED:
            continue
        ran = effects.get(job_id, Counter())
        if any(count > 1 for count in ran.values()):
            problems.append(f"{job_id}: an attempt ran twice {dict(ran)}")
        if record.attempt not in ran:
            problems.append(f"{job_id}: completed without its attempt's effect {dict(ran)}")
        if any(attempt > record.attempt for attempt in ran):
            problems.append(f"{job_id}: ran after its settle landed {dict(ran)}")
        if not isinstance(record.result, dict) or record.result.get("attempt") != record.attempt:
            problems.append(f"{job_id}: result {record.result} of attempt {record.attempt}")
    assert problems == [], f"{problems[:20]}\n{workers.report()}"

    last_kill = {job_id: kill for kill in done for job_id in kill.in_flight}
    late, rescues, settled = {}, [], []
    for job_id, kill in last_kill.items():
        record = records[job_id]
        assert record is not None and record.finished_at is not None
        rescued = _rescued_at(record.errors, kill.at)
        assert rescued is not None, f"{job_id} caught by a kill has no LeaseExpired entry after it"
        delay = (rescued - kill.at).total_seconds()
        rescues.append(delay)
        settled.append((record.finished_at - kill.at).total_seconds())
        if delay > RESCUE_BOUND:
            late[str(job_id)] = round(delay, 2)
    assert not late, f"rescued later than {RESCUE_BOUND:g} s after the kill: {late}"
    caught = [len(kill.in_flight) for kill in done]
    latest = (
        f"{max(rescues, default=0):.2f} s to a rescue, {max(settled, default=0):.2f} s to a settle"
    )
    print(
        f"\n[redis soak] {len(ids)} jobs, {len(done)} SIGKILLs, in flight per kill {caught}; "
        f"0 lost, 0 run after a settle, 0 left running; from a kill, at the latest {latest}"
    )


def test_sigkill_soak_redis_small(redis_workers: RedisWorkers) -> None:
    _soak(
        redis_workers,
        jobs=_size("ULTIMAT3_REDIS_SOAK_JOBS", 60),
        kills=_size("ULTIMAT3_REDIS_SOAK_KILLS", 2),
        seed=20261201,
    )


@pytest.mark.slow
def test_sigkill_soak_redis(redis_workers: RedisWorkers) -> None:
    _soak(
        redis_workers,
        jobs=_size("ULTIMAT3_REDIS_SOAK_JOBS_SLOW", 600),
        kills=_size("ULTIMAT3_REDIS_SOAK_KILLS_SLOW", 6),
        seed=20261202,
    )
