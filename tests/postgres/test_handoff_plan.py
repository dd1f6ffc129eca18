"""A settle that hands its runs' concurrency slots on (``slots_handed`` in ``sql/jobs.sql``)
matches the rows it frees with the runs offered them once, by grouping the two lists: not by
joining the two CTEs, which the planner takes for a row each and so compares every freed row
with every offered run, for the update and again for the delete (64 of each: 6,048 rows
compared and dropped, about a tenth of the statement's CPU)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.db import connection

from ultimat3_jobs.drivers.postgres.params import ack_params
from ultimat3_jobs.drivers.postgres.queries import STATEMENTS
from ultimat3_jobs.types import SettleItem

pytestmark = pytest.mark.django_db

SLOTS = 64
KEY = "job:tests.handoff-plan"


def _running(n: int) -> list[tuple[uuid.UUID, uuid.UUID]]:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            insert into x_jobs (id, name, queue, priority, run_at, input, state, claim_token,
                                started_at, lease_expires_at, attempt, worker_id)
            select gen_random_uuid(), 'tests.noop', 'default', 0, now(), '{}'::jsonb,
                   'running', gen_random_uuid(), now(), now() + interval '5 minutes', 1, 'w'
            from generate_series(1, %(n)s)
            returning id, claim_token
            """,
            {"n": n},
        )
        return [(row[0], row[1]) for row in cursor.fetchall()]


def _nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    found = [node]
    for child in node.get("Plans", []):
        found.extend(_nodes(child))
    return found


def test_the_handoff_matches_freed_rows_and_offered_runs_once() -> None:
    """No join compares the offered runs (``next_runs``) with the freed rows pair by pair."""
    owners, nexts = _running(SLOTS), _running(SLOTS)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            insert into x_job_leases (key, slot, kind, job_id, claim_token, acquired_at,
                                      expires_at)
            select %(key)s, o.n - 1, 'concurrency', o.id, o.token, now(),
                   now() + interval '5 minutes'
            from unnest(%(ids)s::uuid[], %(tokens)s::uuid[]) with ordinality as o(id, token, n)
            """,
            {"key": KEY, "ids": [i for i, _ in owners], "tokens": [t for _, t in owners]},
        )
        items = [SettleItem(job_id=i, claim_token=t, action="complete") for i, t in owners]
        params = {
            **ack_params(items),
            "next_ids": [i for i, _ in nexts],
            "next_tokens": [t for _, t in nexts],
            "next_keys": [KEY] * SLOTS,
            "next_limits": [SLOTS] * SLOTS,
            "next_relayed": [False] * SLOTS,
        }
        cursor.execute("explain (analyze, format json) " + STATEMENTS["job_settle_handoff"], params)
        raw = cursor.fetchone()[0]
        cursor.execute("select job_id from x_job_leases where key = %s", [KEY])
        holders = {row[0] for row in cursor.fetchall()}
    assert holders == {i for i, _ in nexts}  # every slot passed on, none freed
    plan = (raw if isinstance(raw, list) else json.loads(raw))[0]["Plan"]
    compared = sum(
        node.get("Rows Removed by Join Filter", 0)
        for node in _nodes(plan)
        if any(n.get("CTE Name") == "next_runs" for n in _nodes(node))
    )
    assert compared == 0, f"{compared} pairs of a freed row and an offered run compared and dropped"
