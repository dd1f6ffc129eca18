"""Helpers shared by the driver parity suite: request builders, claim/settle shortcuts, and the
per-driver store controls that move time and read counters."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from ultimat3_jobs.drivers.base import RESCUE_BATCH_DEFAULT, JobDriver
from ultimat3_jobs.types import (
    AckItem,
    AttemptError,
    ClaimedJob,
    EnqueueRequest,
    ExpiredAttempt,
    FailureDecision,
    JobRecord,
    JobState,
    RescuedJob,
    new_job_id,
)

COUNTER_KEYS = ("completed", "retried", "dead", "dropped", "refused", "cancelled")
WORKER = "worker-1"
LEASE = 30.0
HOUR = timedelta(hours=1)


def utcnow() -> datetime:
    return datetime.now(UTC)


def request(**overrides: Any) -> EnqueueRequest:
    fields: dict[str, Any] = {
        "id": new_job_id(),
        "name": "tests.echo",
        "queue": "default",
        "input_json": '{"n":1}',
        "max_attempts": 3,
    }
    fields.update(overrides)
    return EnqueueRequest(**fields)


def enqueue(driver: JobDriver, **overrides: Any) -> uuid.UUID:
    """Enqueue one job that must be created; answer its id."""
    req = request(**overrides)
    result = driver.job_enqueue(request=req)
    assert (result.id, result.status) == (req.id, "created")
    return req.id


def claim(
    driver: JobDriver,
    queues: Sequence[str] = ("default",),
    *,
    limit: int = 10,
    worker_id: str = WORKER,
    lease_seconds: float = LEASE,
) -> list[ClaimedJob]:
    return driver.job_claim(
        queues=queues, limit=limit, worker_id=worker_id, lease_seconds=lease_seconds
    )


def claim_one(driver: JobDriver, queues: Sequence[str] = ("default",), **kwargs: Any) -> ClaimedJob:
    claimed = claim(driver, queues, limit=1, **kwargs)
    assert len(claimed) == 1, claimed
    return claimed[0]


def claim_ids(
    driver: JobDriver, queues: Sequence[str] = ("default",), **kwargs: Any
) -> list[uuid.UUID]:
    return [job.id for job in claim(driver, queues, **kwargs)]


def rescue(
    driver: JobDriver,
    *,
    delay_seconds: float = 0.0,
    dead_letter: bool = True,
    limit: int = RESCUE_BATCH_DEFAULT,
    seen: list[ExpiredAttempt] | None = None,
) -> list[RescuedJob]:
    """``job_rescue_expired`` with a fixed policy (the worker's real one lives in
    ``worker.policy``): a body that never started is given back; attempts left retry after
    ``delay_seconds``; spent ones fail, or drop when not ``dead_letter``. ``seen`` collects
    what the driver handed the policy."""

    def decide(expired: ExpiredAttempt) -> FailureDecision:
        if seen is not None:
            seen.append(expired)
        if not expired.started:
            return FailureDecision(action="retry", counts_as_attempt=False)
        if expired.attempt < expired.max_attempts:
            return FailureDecision(action="retry", delay_seconds=delay_seconds)
        return FailureDecision(action="fail" if dead_letter else "drop")

    return driver.job_rescue_expired(decide=decide, limit=limit)


def get(driver: JobDriver, job_id: uuid.UUID) -> JobRecord:
    record = driver.job_get(job_id=job_id)
    assert record is not None, f"job {job_id} is gone"
    return record


def state_of(driver: JobDriver, job_id: uuid.UUID) -> JobState | None:
    record = driver.job_get(job_id=job_id)
    return None if record is None else record.state


def attempt_error(attempt: int = 1, **overrides: Any) -> AttemptError:
    fields: dict[str, Any] = {
        "attempt": attempt,
        "error_class": "builtins.ValueError",
        "message": f"boom {attempt}",
        "traceback": f"Traceback (most recent call last):\n  attempt {attempt}\n",
        "worker_id": WORKER,
    }
    fields.update(overrides)
    return AttemptError(**fields)


def seconds_between(later: datetime | None, earlier: datetime | None) -> float:
    assert later is not None and earlier is not None
    return (later - earlier).total_seconds()


def about(expected: float, actual: float, tolerance: float = 2.0) -> bool:
    return abs(expected - actual) <= tolerance


# -- fenced writes ----------------------------------------------------------------------------
# Each takes (driver, job_id, claim_token) and answers whether the write landed.

FencedWrite = Callable[[JobDriver, uuid.UUID, uuid.UUID], bool]


def ack(driver: JobDriver, job_id: uuid.UUID, token: uuid.UUID, result_json: str = "null") -> bool:
    items = [AckItem(job_id=job_id, claim_token=token, result_json=result_json)]
    landed = driver.job_ack_many(items=items)
    assert landed <= {job_id}
    return job_id in landed


def nack(action: str, *, counts: bool = True, delay: float = 0.0) -> FencedWrite:
    def write(driver: JobDriver, job_id: uuid.UUID, token: uuid.UUID) -> bool:
        return driver.job_nack(
            job_id=job_id,
            claim_token=token,
            action=action,  # type: ignore[arg-type]
            delay_seconds=delay,
            error=attempt_error(),
            counts_as_attempt=counts,
        )

    return write


def heartbeat(driver: JobDriver, job_id: uuid.UUID, token: uuid.UUID) -> bool:
    beat = driver.job_heartbeat_many(
        attempts=[(job_id, token)], lease_seconds=120, progress={job_id: '{"beat":1}'}
    )
    assert beat.held <= {job_id} and not beat.busy
    return job_id in beat.renewed


def progress(driver: JobDriver, job_id: uuid.UUID, token: uuid.UUID) -> bool:
    return driver.job_progress(job_id=job_id, claim_token=token, progress_json='{"done":7}')


FENCED_WRITES: dict[str, FencedWrite] = {
    "ack": ack,
    "nack_retry": nack("retry"),
    "nack_fail": nack("fail"),
    "nack_drop": nack("drop"),
    "heartbeat": heartbeat,
    "progress": progress,
}


FIRST_IN_LINE = datetime(2000, 1, 1, tzinfo=UTC)
"""A ``run_at`` before any other due job's: the job :func:`claim_first` claims has it while
the claim runs."""


def claim_first(driver: JobDriver, job_id: uuid.UUID) -> ClaimedJob:
    """Claim exactly the queued, due job ``job_id``. Two due jobs of one queue may tie in claim
    order (one priority, one ``run_at``: two enqueues in one PostgreSQL transaction share
    ``now()``), and the claim then takes either; so the job is put first in line for the claim,
    its ``run_at`` moved back after it. A job of a higher priority in its queue still comes
    first: that is refused, loudly."""
    record = get(driver, job_id)
    assert record.state == "queued", f"job {job_id} is {record.state}, not queued"
    controls = store_controls(driver)
    controls.set_run_at(job_id, FIRST_IN_LINE)
    try:
        job = claim_one(driver, (record.queue,))
    finally:
        controls.set_run_at(job_id, record.run_at)
    assert job.id == job_id, f"the claim took {job.id}, not {job_id} (a higher priority?)"
    return job


def put_in_state(driver: JobDriver, job_id: uuid.UUID, state: str) -> ClaimedJob | None:
    """Move a freshly enqueued, due job to ``state``; answer the claim when one was made."""
    if state == "queued":
        return None
    if state == "cancelled":
        assert driver.job_cancel(job_id=job_id) is True
        return None
    job = claim_first(driver, job_id)
    if state == "completed":
        assert ack(driver, job.id, job.claim_token)
    elif state == "failed":
        assert nack("fail")(driver, job.id, job.claim_token)
    else:
        assert state == "running", state
    assert state_of(driver, job_id) == state
    return job


@contextlib.contextmanager
def wakes_of(driver: JobDriver) -> Iterator[list[str]]:
    """The queues woken while the block runs, in order. The subscription is live before the
    block starts; after it, the wakes still in flight (Redis delivers them from a thread) are
    waited for: until a probe enqueue's own wake arrives, which the store sends after them."""
    woken: list[str] = []
    subscription = driver.wake_subscribe(on_wake=woken.append)
    assert subscription is not None
    try:
        deadline = time.monotonic() + 10
        while not subscription.is_live():
            assert time.monotonic() < deadline, "the wake never went live"
            time.sleep(0.01)
        yield woken
        deadline = time.monotonic() + 10
        marker = f"wake-probe-{uuid.uuid4().hex[:12]}"
        driver.job_enqueue(request=request(queue=marker))
        while marker not in woken:
            assert time.monotonic() < deadline, f"the probe's wake never came: {woken}"
            time.sleep(0.01)
        woken.remove(marker)
    finally:
        subscription.close()


# -- store controls ---------------------------------------------------------------------------


class PostgresStore:
    """Moves time and reads counters through the ORM on ``ultimat3_jobs.models``."""

    def _update(self, job_id: uuid.UUID, **fields: Any) -> None:
        from ultimat3_jobs.models import Job

        assert Job.objects.filter(id=job_id).update(**fields) == 1

    def set_run_at(self, job_id: uuid.UUID, at: datetime) -> None:
        self._update(job_id, run_at=at)

    def make_due(self, job_id: uuid.UUID) -> None:
        self.set_run_at(job_id, utcnow() - HOUR)

    def make_future(self, job_id: uuid.UUID, seconds: float) -> None:
        self._update(job_id, run_at=utcnow() + timedelta(seconds=seconds))

    def expire_lease(self, job_id: uuid.UUID) -> None:
        self._update(job_id, lease_expires_at=utcnow() - HOUR)

    def counters(self, name: str) -> dict[str, int]:
        from django.db.models import Sum

        from ultimat3_jobs.models import JobCounter

        rows = JobCounter.objects.filter(name=name, period="minute")
        sums = rows.aggregate(**{key: Sum(key) for key in COUNTER_KEYS})
        return {key: int(sums[key] or 0) for key in COUNTER_KEYS}

    def row_count(self) -> int:
        from ultimat3_jobs.models import Job

        return Job.objects.count()

    def expire_worker(self, worker_id: str) -> None:
        from ultimat3_jobs.models import JobWorker

        assert JobWorker.objects.filter(id=worker_id).update(expires_at=utcnow() - HOUR) == 1

    def backdate_worker(self, worker_id: str) -> None:
        """Move a worker's started_at, heartbeat_at and expires_at an hour back."""
        from django.db.models import F

        from ultimat3_jobs.models import JobWorker

        moved = JobWorker.objects.filter(id=worker_id).update(
            started_at=F("started_at") - HOUR,
            heartbeat_at=F("heartbeat_at") - HOUR,
            expires_at=F("expires_at") - HOUR,
        )
        assert moved == 1


class MemoryStore:
    """Moves time and reads counters through the memory driver's test-support methods."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver

    def set_run_at(self, job_id: uuid.UUID, at: datetime) -> None:
        self.driver._set_run_at(job_id, at)

    def make_due(self, job_id: uuid.UUID) -> None:
        self.set_run_at(job_id, utcnow() - HOUR)

    def make_future(self, job_id: uuid.UUID, seconds: float) -> None:
        self.driver._set_run_at(job_id, utcnow() + timedelta(seconds=seconds))

    def expire_lease(self, job_id: uuid.UUID) -> None:
        self.driver._set_lease_expires_at(job_id, utcnow() - HOUR)

    def counters(self, name: str) -> dict[str, int]:
        totals = dict.fromkeys(COUNTER_KEYS, 0)
        for (row_name, period, _bucket), row in self.driver.counter_snapshot().items():
            if row_name == name and period == "minute":
                for key in COUNTER_KEYS:
                    totals[key] += int(row.get(key, 0))
        return totals

    def row_count(self) -> int:
        # The memory driver offers no test-support count; its row dict is the table.
        return len(self.driver._rows)

    def expire_worker(self, worker_id: str) -> None:
        self.driver._set_worker_expires_at(worker_id, utcnow() - HOUR)

    def backdate_worker(self, worker_id: str) -> None:
        """Move a worker's started_at, heartbeat_at and expires_at an hour back."""
        self.driver._shift_worker_times(worker_id, -HOUR)


class RedisControls:
    """Moves time and reads counters on a Redis driver's store: through its test-support
    script for a job's times, and the store's keys (its prefix) for the rest."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        self.client = driver.redis()
        self.base = driver.prefix

    def set_run_at(self, job_id: uuid.UUID, at: datetime) -> None:
        self.driver._set_times(job_id, run_at=at)

    def make_due(self, job_id: uuid.UUID) -> None:
        self.set_run_at(job_id, utcnow() - HOUR)

    def make_future(self, job_id: uuid.UUID, seconds: float) -> None:
        self.driver._set_times(job_id, run_at=utcnow() + timedelta(seconds=seconds))

    def expire_lease(self, job_id: uuid.UUID) -> None:
        self.driver._set_times(job_id, lease_expires_at=utcnow() - HOUR)

    def counter_rows(self, period: str = "minute") -> dict[tuple[str, int], dict[str, int]]:
        rows: dict[tuple[str, int], dict[str, int]] = {}
        for field, value in self.client.hgetall(f"{self.base}:counters:{period}").items():
            bucket, outcome, name = field.decode().split("\t", 2)
            row = rows.setdefault((name, int(bucket)), dict.fromkeys(COUNTER_KEYS, 0))
            row[outcome] += int(value)
        return rows

    def counters(self, name: str) -> dict[str, int]:
        totals = dict.fromkeys(COUNTER_KEYS, 0)
        for (row_name, _bucket), row in self.counter_rows().items():
            if row_name == name:
                for key in COUNTER_KEYS:
                    totals[key] += row[key]
        return totals

    def put_counter(self, name: str, period: str, bucket: datetime, **counts: int) -> None:
        """Write one counter row directly, as a rollup would."""
        seconds = int(bucket.timestamp())
        for outcome, value in counts.items():
            if value:
                field = f"{seconds}\t{outcome}\t{name}"
                self.client.hincrby(f"{self.base}:counters:{period}", field, value)
                self.client.zadd(
                    f"{self.base}:counter_rows:{period}", {f"{seconds}\t{name}": seconds}
                )

    def row_count(self) -> int:
        return int(self.client.zcard(f"{self.base}:jobs"))

    def _shift_worker(
        self, worker_id: str, fields: Sequence[str], to: Callable[[int], int]
    ) -> None:
        key = f"{self.base}:worker:{worker_id}"
        values = self.client.hmget(key, *fields)
        assert None not in values, f"no worker {worker_id}"
        moved = {field: str(to(int(value))) for field, value in zip(fields, values, strict=True)}
        self.client.hset(key, mapping=moved)
        if "expires_at" in moved:
            self.client.zadd(f"{self.base}:workers", {worker_id: int(moved["expires_at"])})

    def expire_worker(self, worker_id: str) -> None:
        past = int((utcnow() - HOUR).timestamp() * 1_000_000)
        self._shift_worker(worker_id, ["expires_at"], lambda _: past)

    def backdate_worker(self, worker_id: str) -> None:
        """Move a worker's started_at, heartbeat_at and expires_at an hour back."""
        hour = 3600 * 1_000_000
        fields = ["started_at", "heartbeat_at", "expires_at"]
        self._shift_worker(worker_id, fields, lambda value: value - hour)

    def expire_leader(self, name: str) -> None:
        key = f"{self.base}:leader:{name}"
        assert self.client.exists(key), f"no leader lease {name}"
        self.client.hset(key, "expires_at", str(int((utcnow() - HOUR).timestamp() * 1_000_000)))

    def leader_row(self, name: str) -> tuple[str, int]:
        holder, epoch = self.client.hmget(f"{self.base}:leader:{name}", "holder", "epoch")
        return holder.decode(), int(epoch)


def counters(**moved: int) -> dict[str, int]:
    """A full counter dict: zero everywhere but ``moved``."""
    assert set(moved) <= set(COUNTER_KEYS)
    return {key: moved.get(key, 0) for key in COUNTER_KEYS}


def store_controls(driver: JobDriver) -> PostgresStore | MemoryStore | RedisControls:
    """The store controls of ``driver`` (one of the parity suite's three)."""
    if driver.name == "postgres":
        return PostgresStore()
    if driver.name == "redis":
        return RedisControls(driver)
    assert driver.name == "memory", f"no store controls for the {driver.name} driver"
    return MemoryStore(driver)
