"""Declared limits work end to end on the Redis driver: a ``concurrency=1`` job drained by two
workers never runs twice at once (intervals by Redis's own clock), the system check and the
worker's start-up accept limits on it, lease keys are the model's quoted keys, and a key of rate
stamps expires by itself while a key of concurrency slots never does."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.drivers.support import request
from tests.limits.jobs import HANDLES, one_at_a_time, per_key, rated
from tests.limits.support import most_at_once
from tests.worker.conftest import wait_for
from ultimat3_jobs.checks import check_limits_enforceable
from ultimat3_jobs.drivers.base import LeaseRequest
from ultimat3_jobs.drivers.redis import RedisDriver
from ultimat3_jobs.model.limits import lease_requests
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.runtime.worker import Worker, WorkerConfig
from ultimat3_jobs.types import JobState

for _handle in HANDLES:  # declared at import; registered per test below, as tests/limits does
    registry.unregister(_handle.name)


@pytest.fixture(autouse=True)
def limited_jobs() -> Iterator[None]:
    for handle in HANDLES:
        registry.register(handle)
    yield
    for handle in HANDLES:
        registry.unregister(handle.name)


def settled(driver: RedisDriver, ids: list[Any]) -> bool:
    records = [driver.job_get(job_id=job_id) for job_id in ids]
    return all(
        r is not None and r.state not in (JobState.QUEUED, JobState.RUNNING) for r in records
    )


def lease_keys(driver: RedisDriver) -> list[str]:
    head = f"{driver.prefix}:lease:"
    return sorted(name.decode()[len(head) :] for name in driver.redis().scan_iter(f"{head}*"))


def test_a_fleet_cap_of_one_never_overlaps_across_two_redis_workers(redis_worker) -> None:
    driver, make = redis_worker
    ids = [r.id for r in one_at_a_time.enqueue_many([{"sleep": 0.03}] * 12)]
    workers = [make(driver=driver, queues=("default",)) for _ in range(2)]
    wait_for(lambda: settled(driver, ids), timeout=90, what="every capped job settled")
    records = [driver.job_get(job_id=job_id) for job_id in ids]
    assert {(r.state, r.attempt) for r in records} == {(JobState.COMPLETED, 1)}
    spans = [(r.started_at, r.finished_at) for r in records]
    assert most_at_once(spans) == 1
    assert lease_keys(driver) == [], "every slot went with its settle"
    (total,) = [t for t in driver.counter_total() if t.name == one_at_a_time.name]
    assert (total.completed, total.retried) == (12, 0), "a shed is no retry"
    for running in workers:
        running.stop()


def test_the_system_check_and_the_worker_accept_limits_on_redis(redis_worker) -> None:
    driver, _ = redis_worker
    assert driver.has_lease_store
    assert check_limits_enforceable() == []
    Worker(driver, WorkerConfig(queues=("default",), concurrency=1))  # no refusal


def claimed(driver: RedisDriver, handle: Any, **input: Any) -> Any:
    handle.enqueue(**input)
    (job,) = driver.job_claim(queues=["default"], limit=1, worker_id="w", lease_seconds=30)
    return job


def take(driver: RedisDriver, handle: Any, job: Any) -> Any:
    definition = handle.definition
    requests = lease_requests(definition.name, definition.concurrency, definition.rate, job.input)
    return driver.lease_acquire(job_id=job.id, claim_token=job.claim_token, requests=requests)


def test_lease_keys_are_the_models_quoted_keys(redis_worker) -> None:
    driver, _ = redis_worker
    job = claimed(driver, per_key, key="a:b%c")
    assert take(driver, per_key, job).granted
    key = "job-key:tests.limits.per_key:a%3Ab%25c"
    assert lease_keys(driver) == [key]
    (holder,) = driver.lease_holders(key=key)
    assert (holder.job_id, holder.claim_token) == (job.id, job.claim_token)


def test_a_rate_key_expires_by_itself_and_a_concurrency_key_never(redis_worker) -> None:
    driver, _ = redis_worker
    capped, limited = claimed(driver, one_at_a_time), claimed(driver, rated, n=1)
    assert take(driver, one_at_a_time, capped).granted and take(driver, rated, limited).granted
    client = driver.redis()
    assert client.pttl(f"{driver.prefix}:lease:job:tests.limits.one_at_a_time") == -1
    ttl = client.pttl(f"{driver.prefix}:lease:rate:tests.limits.rated")
    assert 0 < ttl <= 2_000, "a second past the stamp's one-second period"


def test_lease_list_reads_every_key_of_its_own_store_only_in_key_order() -> None:
    """More keys than one script reads (a chunk), under a prefix whose ``*`` would match the
    other store's keys as a glob: the listing reads its own keys only, in order, bounded, each
    row with the worker whose claim holds it."""
    tag = uuid.uuid4().hex
    mine = RedisDriver(alias="redis", prefix=f"{{u3j-test-{tag}*}}")
    other = RedisDriver(alias="redis", prefix=f"{{u3j-test-{tag}-other}}")
    try:
        for store, keys in ((mine, 250), (other, 3)):
            store.job_enqueue(request=request())
            (job,) = store.job_claim(queues=["default"], limit=1, worker_id="w", lease_seconds=30)
            wanted = [LeaseRequest(key=f"job-key:n:{n:03d}", limit=1) for n in range(keys)]
            grant = store.lease_acquire(job_id=job.id, claim_token=job.claim_token, requests=wanted)
            assert grant.granted
        rows = mine.lease_list()
        assert [h.key for h in rows] == [f"job-key:n:{n:03d}" for n in range(250)]
        assert len({h.job_id for h in rows}) == 1 and {h.worker_id for h in rows} == {"w"}
        assert [h.key for h in mine.lease_list(limit=205)][-1] == "job-key:n:204"
        assert len(other.lease_list()) == 3
    finally:
        for store in (mine, other):
            client = store.redis()
            pattern = store.prefix.replace("*", "\\*") + "*"
            names = list(client.scan_iter(match=pattern, count=1000))
            if names:
                client.delete(*names)
