"""What a claim and an ack cost inside Redis, counted in the commands their scripts run (the
"[<db> lua]" lines of MONITOR). Per job, a claim reads the job's hash once and writes it once,
and an ack reads it, writes it and drops its lease; every index a batch of jobs touches is
written in one command per key, and jobs due when enqueued are never placed again. So the count
per job stays flat, a few commands, however many jobs a call takes."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable

import redis
from django.conf import settings

from tests.drivers.support import claim, request
from ultimat3_jobs.drivers.redis import RedisDriver
from ultimat3_jobs.types import AckItem, ClaimedJob

JOBS = 200
PER_CALL = 100
BUDGET_PER_JOB = {"claim": 2.5, "ack": 3.5}


def script_commands(driver: RedisDriver, action: Callable[[], None]) -> Counter[str]:
    """The commands scripts ran on the driver's database while ``action`` ran, by name."""
    db = int(driver.redis().connection_pool.connection_kwargs.get("db", 0))
    mark = f"end-of-count-{uuid.uuid4().hex}"
    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=30)
    counts: Counter[str] = Counter()
    try:
        with client.monitor() as monitor:
            action()
            driver.redis().echo(mark)
            for line in monitor.listen():
                if line["db"] != db:
                    continue
                if mark in line["command"]:
                    break
                if line["client_type"] == "lua":
                    counts[line["command"].split(" ", 1)[0].upper()] += 1
    finally:
        client.close()
    return counts


def test_a_claim_and_an_ack_run_a_few_commands_per_job(redis_store: RedisDriver):
    redis_store.job_enqueue_many(requests=[request() for _ in range(JOBS)])
    claimed: list[ClaimedJob] = []

    def claim_all() -> None:
        for _ in range(JOBS // PER_CALL):
            claimed.extend(claim(redis_store, limit=PER_CALL))

    def ack_all() -> None:
        for start in range(0, JOBS, PER_CALL):
            items = [
                AckItem(job_id=job.id, claim_token=job.claim_token, result_json="null")
                for job in claimed[start : start + PER_CALL]
            ]
            assert len(redis_store.job_ack_many(items=items)) == len(items)

    costs = {"claim": script_commands(redis_store, claim_all)}
    assert len(claimed) == JOBS
    costs["ack"] = script_commands(redis_store, ack_all)
    for what, counts in costs.items():
        per_job = sum(counts.values()) / JOBS
        print(f"{what}: {per_job:g} commands per job inside the scripts: {dict(counts)}")
        assert per_job <= BUDGET_PER_JOB[what], (what, dict(counts))
