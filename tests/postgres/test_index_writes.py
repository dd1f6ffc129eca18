"""What a job's state changes write to the indexes of x_jobs. No update of x_jobs is HOT (state
is in the partial indexes' predicates), so an enqueue, a claim and a settle each write an entry
to every index whose predicate the new row meets: an index of every row costs a drained job
three entries. The operator's reads of finished jobs by name take an index of finished rows
only, which the enqueue and the claim leave alone, and its predicate is one the planner proves
from those reads' conditions."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection

from tests.drivers.support import request
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.drivers.postgres.queries import STATEMENTS
from ultimat3_jobs.types import ClaimedJob, SettleItem

pytestmark = pytest.mark.django_db

JOBS = 20


def _indexes_holding(state: str) -> set[str]:
    """The indexes of x_jobs whose predicate (if any) every row in ``state`` meets: the ones
    the statement that put the rows in that state wrote an entry to."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            select c.relname, pg_get_expr(i.indpred, i.indrelid)
            from pg_index i join pg_class c on c.oid = i.indexrelid
            where i.indrelid = 'x_jobs'::regclass
            """
        )
        indexes = cursor.fetchall()
        held = set()
        for name, predicate in indexes:
            cursor.execute(
                f"select bool_and(coalesce({predicate or 'true'}, false)), count(*) "
                "from x_jobs where state = %s",
                [state],
            )
            holds, rows = cursor.fetchone()
            assert rows == JOBS
            if holds:
                held.add(name)
        return held


def _settle(driver: PostgresDriver, jobs: list[ClaimedJob], action: str) -> None:
    driver.job_settle_many(
        items=[SettleItem(job_id=j.id, claim_token=j.claim_token, action=action) for j in jobs]
    )


def test_an_enqueue_a_claim_and_a_settle_write_only_the_indexes_of_their_state() -> None:
    driver = PostgresDriver()
    driver.job_enqueue_many(requests=[request(input_json="{}") for _ in range(JOBS)])
    assert _indexes_holding("queued") == {"x_jobs_pkey", "x_jobs_newest", "x_jobs_claim"}
    claimed = driver.job_claim(queues=["default"], limit=JOBS, worker_id="w", lease_seconds=30)
    assert _indexes_holding("running") == {"x_jobs_pkey", "x_jobs_newest", "x_jobs_lease"}
    _settle(driver, claimed, "complete")
    assert _indexes_holding("completed") == {
        "x_jobs_pkey",
        "x_jobs_newest",
        "x_jobs_finished",
        "x_jobs_name_finished",
    }


def _index_names(node: dict[str, Any]) -> set[str]:
    found = {node["Index Name"]} if "Index Name" in node else set()
    for child in node.get("Plans", []):
        found |= _index_names(child)
    return found


@pytest.mark.parametrize(
    ("statement", "params"),
    [
        ("queue_stats", {"limit": 10}),
        ("job_requeue_failed", {"name": "tests.echo", "limit": 10}),
    ],
)
def test_the_reads_of_finished_jobs_by_name_prove_the_finished_index(
    statement: str, params: dict[str, Any]
) -> None:
    driver = PostgresDriver()
    driver.job_enqueue_many(requests=[request(input_json="{}") for _ in range(JOBS)])
    claimed = driver.job_claim(queues=["default"], limit=JOBS, worker_id="w", lease_seconds=30)
    _settle(driver, claimed, "fail")
    with connection.cursor() as cursor:
        # Only an index can answer now: a partial index whose predicate the statement does not
        # prove is never used, and the plan then has no index of finished rows in it.
        cursor.execute("set local enable_seqscan = off")
        cursor.execute("set local enable_bitmapscan = off")
        cursor.execute("explain (format json) " + STATEMENTS[statement], params)
        (plan,) = cursor.fetchone()
    plan = plan if isinstance(plan, list) else json.loads(plan)
    assert "x_jobs_name_finished" in _index_names(plan[0]["Plan"])
