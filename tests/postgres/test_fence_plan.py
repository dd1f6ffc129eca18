"""The writes fenced to a running attempt (settles, heartbeats) find their rows by primary key,
however few rows the planner's statistics say are running. Statistics taken over a queued
backlog (the usual moment of an ANALYZE) make x_jobs_lease look empty; a fence written as
"state = 'running'" let the planner walk that index and join every running row with every given
id, re-reading the given arrays once per running row: quadratic in the batch and the work in
flight, most of the database's CPU per job in a drain."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from tests.drivers.support import request
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.drivers.postgres.params import ack_params, settle_params
from ultimat3_jobs.drivers.postgres.queries import STATEMENTS
from ultimat3_jobs.types import ClaimedJob, SettleItem

pytestmark = pytest.mark.django_db

BACKLOG = 400
RUNNING = 200
BATCH = 100


@pytest.fixture
def running() -> list[ClaimedJob]:
    """RUNNING running attempts, with statistics taken while none ran."""
    driver = PostgresDriver()
    driver.job_enqueue_many(requests=[request(input_json="{}") for _ in range(BACKLOG)])
    with connection.cursor() as cursor:
        cursor.execute("analyze x_jobs")
    return list(
        driver.job_claim(queues=["default"], limit=RUNNING, worker_id="w", lease_seconds=30)
    )


def _settles(jobs: list[ClaimedJob], action: str) -> list[SettleItem]:
    return [SettleItem(job_id=j.id, claim_token=j.claim_token, action=action) for j in jobs]


def _heartbeat(jobs: list[ClaimedJob]) -> dict[str, Any]:
    return {
        "ids": [j.id for j in jobs],
        "tokens": [j.claim_token for j in jobs],
        "progress": [None for _ in jobs],
        "lease_seconds": 30.0,
    }


PARAMS: dict[str, Callable[[list[ClaimedJob]], dict[str, Any]]] = {
    "job_ack_many": lambda jobs: ack_params(_settles(jobs, "complete")),
    "job_settle_many": lambda jobs: settle_params(_settles(jobs, "retry")),
    "job_heartbeat_many": _heartbeat,
}


def _indexes(node: dict[str, Any]) -> set[str]:
    found = {node["Index Name"]} if "Index Name" in node else set()
    for child in node.get("Plans", []):
        found |= _indexes(child)
    return found


@pytest.mark.parametrize("statement", sorted(PARAMS))
def test_a_fenced_batch_does_not_walk_the_running_rows(
    running: list[ClaimedJob], statement: str
) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "explain (format json) " + STATEMENTS[statement], PARAMS[statement](running[:BATCH])
        )
        raw = cursor.fetchone()[0]
    plan = (raw if isinstance(raw, list) else json.loads(raw))[0]["Plan"]
    # By primary key, or (on a table this small) a hash join over one scan: never the lease index.
    assert "x_jobs_lease" not in _indexes(plan)
