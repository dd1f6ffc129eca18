"""The claim seeks: at a realistic depth its plan walks x_jobs_claim in claim order and stops,
with no Sort under the LockRows node, for one queue and for several."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection

from ultimat3_jobs.drivers.postgres.queries import STATEMENTS

pytestmark = pytest.mark.django_db

DEPTH = 30_000


@pytest.fixture
def deep_queues() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            insert into x_jobs (id, name, queue, priority, run_at, input)
            select gen_random_uuid(), 'tests.noop',
                   case when g %% 3 = 0 then 'alpha' when g %% 3 = 1 then 'beta' else 'gamma' end,
                   (g %% 7) - 3, now() - make_interval(secs => g), '{}'::jsonb
            from generate_series(1, %(depth)s) as g
            """,
            {"depth": DEPTH},
        )
        cursor.execute("analyze x_jobs")
        cursor.execute("analyze x_job_pauses")


def _plan(queues: list[str], limit: int) -> dict[str, Any]:
    params = {"queues": queues, "limit": limit, "worker_id": "w", "lease_seconds": 30.0}
    with connection.cursor() as cursor:
        cursor.execute("explain (format json) " + STATEMENTS["job_claim"], params)
        raw = cursor.fetchone()[0]
    plan = raw if isinstance(raw, list) else json.loads(raw)
    return plan[0]["Plan"]


def _nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    found = [node]
    for child in node.get("Plans", []):
        found.extend(_nodes(child))
    return found


@pytest.mark.usefixtures("deep_queues")
@pytest.mark.parametrize("queues", [["alpha"], ["alpha", "beta"], ["alpha", "beta", "gamma"]])
def test_claim_seeks_the_partial_index_without_sorting_queued_rows(queues: list[str]) -> None:
    plan = _plan(queues, limit=100)
    lock_rows = [node for node in _nodes(plan) if node["Node Type"] == "LockRows"]
    assert lock_rows, "the claim must lock the rows it takes"
    for lock in lock_rows:
        below = _nodes(lock)[1:]
        assert not [n for n in below if n["Node Type"] in {"Sort", "Incremental Sort"}]
        assert any(n.get("Index Name") == "x_jobs_claim" for n in below)
    # The only sort left merges at most limit rows per queue, above the seeks.
    for node in _nodes(plan):
        if node["Node Type"] == "Sort":
            assert node["Plan Rows"] <= 100 * len(queues)
