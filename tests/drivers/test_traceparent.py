"""Every write that creates a job keeps its request's traceparent, and the claim hands it to the
worker (``ctx.traceparent``): job_enqueue, job_enqueue_many and scheduler_fire."""

from __future__ import annotations

from dataclasses import replace

from tests.drivers.support import claim_one, request
from tests.drivers.test_scheduler import CRON, LEADER, TTL, elect, occurrence_after, sync_one
from ultimat3_jobs.model.cron import idempotency_key
from ultimat3_jobs.model.options import EnqueueOptions
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.model.requests import build_request

HEADER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_job_enqueue_keeps_the_traceparent_to_the_claim(driver):
    driver.job_enqueue(request=request(traceparent=HEADER))
    assert claim_one(driver).traceparent == HEADER


def test_job_enqueue_many_keeps_each_traceparent_to_the_claim(driver):
    driver.job_enqueue_many(requests=[request(traceparent=HEADER), request(traceparent=None)])
    claimed = driver.job_claim(queues=["default"], limit=2, worker_id="w", lease_seconds=30)
    assert sorted(job.traceparent or "" for job in claimed) == ["", HEADER]


def test_scheduler_fire_keeps_the_traceparent_of_its_request(driver):
    assert elect(driver, "a", ttl=TTL) is not None
    state = sync_one(driver)
    occurrence = occurrence_after(state.watermark)
    definition = registry.get(CRON).definition
    options = EnqueueOptions(idempotency_key=idempotency_key(CRON, occurrence))
    fired = replace(build_request(definition, {}, options), traceparent=HEADER)
    result = driver.scheduler_fire(
        cron=CRON,
        old_watermark=state.watermark,
        occurrence=occurrence,
        dispatch=True,
        request=fired,
        leader=LEADER,
        holder="a",
        epoch=1,
    )
    assert result.moved and result.job_id == fired.id
    job = claim_one(driver)
    assert (job.id, job.traceparent) == (fired.id, HEADER)
