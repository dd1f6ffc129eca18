"""The batch settles reach each ending's row through the primary key, whatever the statistics
say of running rows: planned against a backlog analyzed while queued (so the planner expects
almost no running row, as on a table analyzed while mostly queued or mostly finished), with
some hundreds running, no statement drives its join from the running rows' partial index
(``x_jobs_lease``) and reads the batch's arrays again for each of them. That plan costs
O(running x batch): 60 ms for an ack of 106 endings among 330 running (against 1.3 ms by the
primary key), and it paced the capped benchmark drain, whose settles are the larger."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.db import connection

from tests.postgres.support import fill_queued
from ultimat3_jobs.drivers.postgres.params import ack_params, settle_params
from ultimat3_jobs.drivers.postgres.queries import STATEMENTS
from ultimat3_jobs.types import SettleItem

pytestmark = pytest.mark.django_db

BACKLOG = 5_000
RUNNING = 300
BATCH = 100
BATCH_READS = {"Function Scan", "CTE Scan", "Subquery Scan", "Values Scan"}


@pytest.fixture
def running() -> list[tuple[uuid.UUID, uuid.UUID]]:
    """``RUNNING`` claimed rows of a backlog whose statistics were taken while all queued."""
    fill_queued(BACKLOG)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            update x_jobs set state = 'running', claim_token = gen_random_uuid(),
                   started_at = now(), lease_expires_at = now() + interval '5 minutes',
                   attempt = 1, worker_id = 'w'
            where id in (select id from x_jobs order by run_at limit %(n)s)
            returning id, claim_token
            """,
            {"n": RUNNING},
        )
        return [(row[0], row[1]) for row in cursor.fetchall()]


def _items(rows: list[tuple[uuid.UUID, uuid.UUID]], *, nack: bool) -> list[SettleItem]:
    items = [
        SettleItem(job_id=job_id, claim_token=token, action="complete") for job_id, token in rows
    ]
    if nack:
        items[0] = SettleItem(job_id=rows[0][0], claim_token=rows[0][1], action="retry")
    return items


def _params(statement: str, rows: list[tuple[uuid.UUID, uuid.UUID]]) -> dict[str, Any]:
    nack = statement in ("job_settle_many", "job_settle_many_handoff")
    items = _items(rows, nack=nack)
    params: dict[str, Any] = settle_params(items) if nack else ack_params(items)
    if statement.endswith("_handoff"):
        params |= {"next_ids": [], "next_tokens": [], "next_keys": [], "next_limits": []}
        params |= {"next_relayed": []}
    return params


def _nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    found = [node]
    for child in node.get("Plans", []):
        found.extend(_nodes(child))
    return found


def _rereads(plan: dict[str, Any]) -> list[str]:
    """The nested loops whose outer side walks x_jobs_lease and whose inner side reads a batch
    (an unnest, a CTE) again for each running row it finds."""
    bad = []
    for node in _nodes(plan):
        children = node.get("Plans", [])
        if node["Node Type"] != "Nested Loop" or len(children) != 2:
            continue
        outer, inner = children
        walks_running = any(n.get("Index Name") == "x_jobs_lease" for n in _nodes(outer))
        if walks_running and inner["Node Type"] in BATCH_READS:
            bad.append(f"{outer.get('Index Name')} x {inner['Node Type']}")
    return bad


@pytest.mark.parametrize(
    "statement",
    [
        "job_ack_many",
        "job_settle_many",
        "job_settle_handoff",
        "job_settle_many_handoff",
    ],
)
def test_batch_settle_reaches_each_row_by_its_key(
    running: list[tuple[uuid.UUID, uuid.UUID]], statement: str
) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "explain (format json) " + STATEMENTS[statement], _params(statement, running[:BATCH])
        )
        raw = cursor.fetchone()[0]
    plan = (raw if isinstance(raw, list) else json.loads(raw))[0]["Plan"]
    assert _rereads(plan) == []
