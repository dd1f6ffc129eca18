"""The per-process limiter (``ULTIMAT3_JOBS["LIMITS"]``): five numbers, each finite and at least
0 (0 a hard stop), read before the claim so the claim never takes what it would give back."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.limits.support import finished, intervals, most_at_once, most_in_a_window
from tests.testapp import jobs as app_jobs
from tests.worker.conftest import wait_for
from ultimat3_jobs.conf import validate
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.models import Job
from ultimat3_jobs.records import ProcessLimits
from ultimat3_jobs.runtime.worker.attempt import Attempt
from ultimat3_jobs.runtime.worker.limiter import ProcessLimiter
from ultimat3_jobs.types import ClaimedJob, new_job_id


@pytest.mark.parametrize(
    ("limits", "fragment"),
    [
        (3, "must be a dict of IN_FLIGHT"),
        ({"SPEED": 1}, "must be a dict of IN_FLIGHT"),
        ({"IN_FLIGHT": -1}, "['LIMITS']['IN_FLIGHT'] must be an integer from 0"),
        ({"PER_QUEUE": 1.0}, "['LIMITS']['PER_QUEUE'] must be an integer"),
        ({"PER_TENANT": True}, "['LIMITS']['PER_TENANT'] must be an integer"),
        ({"RATE": float("inf")}, "['LIMITS']['RATE'] must be a finite number"),
        ({"BURST": float("nan")}, "['LIMITS']['BURST'] must be a finite number"),
    ],
)
def test_a_bad_limit_is_refused_naming_it(limits: Any, fragment: str) -> None:
    ((check_id, message),) = validate({"LIMITS": limits})
    assert check_id == "ultimat3_jobs.E061"
    assert fragment in message


def test_good_limits_pass() -> None:
    limits = {"IN_FLIGHT": 0, "PER_QUEUE": 2, "PER_TENANT": None, "RATE": 2.5, "BURST": 5}
    assert validate({"LIMITS": limits}) == []


def running(queue: str = "default", tenant: str | None = None) -> Attempt:
    job = ClaimedJob(
        id=new_job_id(),
        name="tests.echo",
        queue=queue,
        input={},
        attempt=1,
        max_attempts=3,
        claim_token=new_job_id(),
        tenant_id=tenant,
        priority=0,
    )
    return Attempt(job=job, definition=None, ctx=JobContext(job_id=job.id, name=job.name))


def test_the_plan_takes_no_more_than_each_limit_leaves() -> None:
    queues = ("a", "b")
    assert ProcessLimiter(ProcessLimits()).plan(queues, 8, []).limit == 8
    assert ProcessLimiter(ProcessLimits(in_flight=3)).plan(queues, 8, [running()]).limit == 2
    assert ProcessLimiter(ProcessLimits(in_flight=0)).plan(queues, 8, []).limit == 0
    per_queue = ProcessLimiter(ProcessLimits(per_queue=2)).plan(
        queues, 8, [running("a"), running("a"), running("b")]
    )
    assert (per_queue.limit, per_queue.queues) == (1, ("b",))
    per_tenant = ProcessLimiter(ProcessLimits(per_tenant=2)).plan(
        queues, 8, [running(tenant="t1"), running(tenant="t1"), running(tenant="t2")]
    )
    assert per_tenant.limit == 0


def test_the_rate_spends_tokens_and_says_when_the_next_comes() -> None:
    now = [100.0]
    limiter = ProcessLimiter(ProcessLimits(rate=2.0, burst=3), clock=lambda: now[0])
    assert limiter.plan(("a",), 8, []).limit == 3  # the burst
    limiter.took(3)
    plan = limiter.plan(("a",), 8, [])
    assert plan.limit == 0 and plan.retry_in == pytest.approx(0.5)
    now[0] += 1.0
    assert limiter.plan(("a",), 8, []).limit == 2
    assert ProcessLimiter(ProcessLimits(rate=0.0)).plan(("a",), 8, []).limit == 0  # hard stop


def test_in_flight_caps_the_process(make_worker) -> None:
    ids = [r.id for r in app_jobs.record.enqueue_many([{"n": n, "sleep": 0.02} for n in range(8)])]
    make_worker(queues=("default",), concurrency=4, limits=ProcessLimits(in_flight=1))
    wait_for(lambda: finished(ids), timeout=60, what="every job settled")
    assert most_at_once(intervals(ids)) == 1


def test_a_rate_spaces_the_claims(make_worker) -> None:
    ids = [r.id for r in app_jobs.record.enqueue_many([{"n": n} for n in range(12)])]
    make_worker(queues=("default",), concurrency=8, limits=ProcessLimits(rate=8.0, burst=2))
    wait_for(lambda: finished(ids), timeout=60, what="every job settled")
    starts = sorted(start for start, _ in intervals(ids))
    assert most_in_a_window(starts, 0.5) <= 2 + 8 * 0.5 + 1  # burst plus the rate's refill


def test_zero_is_a_hard_stop(make_worker) -> None:
    result = app_jobs.record.enqueue(n=1)
    running = make_worker(queues=("default",), concurrency=2, limits=ProcessLimits(in_flight=0))
    time.sleep(0.5)
    assert Job.objects.get(id=result.id).state == "queued"
    assert running.worker.claim_count == 0
