"""The prepared claim runs on the plan cache's generic plan, so a claim is not planned again on
every run (about 0.33 ms of the server's CPU a claim, a seventh of a claim of 90 jobs), and
that plan reaches the rows it takes by primary key, whatever the backlog: a generic plan that
joined the candidates to x_jobs read the whole table (a hash join over a sequential scan, 120
ms at 300,000 rows)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.db import connection

from tests.drivers.support import request
from tests.postgres.test_claim_plan import _nodes
from ultimat3_jobs.drivers.postgres import bound
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.drivers.postgres.queries import STATEMENTS

pytestmark = pytest.mark.django_db(transaction=True)

BACKLOG = 2_000
CLAIMS = 8  # the plan cache compares 5 custom plans with the generic one, then keeps one


@pytest.fixture(autouse=True)
def _fresh_connection() -> Iterator[None]:
    """Each test connects anew (no statement prepared yet), and leaves no dead connection."""
    connection.close()
    yield
    connection.close()


def test_the_prepared_claim_keeps_a_generic_plan_that_reads_by_primary_key() -> None:
    driver = PostgresDriver()
    driver.job_enqueue_many(requests=[request(input_json="{}") for _ in range(BACKLOG)])
    with connection.cursor() as cursor:
        cursor.execute("analyze x_jobs")
    for _ in range(CLAIMS):
        assert driver.job_claim(queues=["default"], limit=10, worker_id="w", lease_seconds=30)
    first_line = STATEMENTS["job_claim"].split("\n")[0]
    with connection.cursor() as cursor:
        cursor.execute(
            "select name, generic_plans, custom_plans from pg_prepared_statements "
            "where strpos(statement, %s) > 0",
            [first_line],
        )
        ((name, generic, custom),) = cursor.fetchall()
        assert generic > 0, f"planned on every run: {custom} custom plans, no generic one"
        cursor.execute(f"explain (format json) execute {name}('{{default}}', 10, 'w', 30)")
        (plan,) = cursor.fetchone()
    plan = plan if isinstance(plan, list) else json.loads(plan)
    scans = {
        (node["Node Type"], node.get("Index Name"))
        for node in _nodes(plan[0]["Plan"])
        if node.get("Relation Name") == "x_jobs"
    }
    assert ("Seq Scan", None) not in scans
    assert ("Index Scan", "x_jobs_pkey") in scans


def test_a_generic_plan_made_on_an_empty_table_is_made_anew_once_a_backlog_landed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Made while x_jobs was empty, the generic plan scans the whole table (a sequential scan
    and a sort per claim, 123 ms a claim at 100,000 rows); the connection discards its plans
    every REPLAN_SECONDS (0 here), so the next claim's plan reads the backlog by index, with no
    ANALYZE between (the server may run without autovacuum)."""
    driver = PostgresDriver()
    with connection.cursor() as cursor:
        cursor.execute("analyze x_jobs")
    for _ in range(CLAIMS):
        assert not driver.job_claim(queues=["default"], limit=90, worker_id="w", lease_seconds=30)
    monkeypatch.setattr(bound, "REPLAN_SECONDS", 0.0)
    monkeypatch.setattr(bound, "REPLAN_STATEMENTS", 0)
    with connection.cursor() as cursor:
        cursor.execute(
            "insert into x_jobs (id, name, queue, input) "
            "select gen_random_uuid(), 'tests.noop', 'default', '{}'::jsonb "
            "from generate_series(1, 100000)"
        )
    assert (
        len(driver.job_claim(queues=["default"], limit=90, worker_id="w", lease_seconds=30)) == 90
    )
    first_line = STATEMENTS["job_claim"].split("\n")[0]
    with connection.cursor() as cursor:
        cursor.execute(
            "select name from pg_prepared_statements where strpos(statement, %s) > 0",
            [first_line],
        )
        ((name,),) = cursor.fetchall()
        cursor.execute(f"explain (format json) execute {name}('{{default}}', 90, 'w', 30)")
        (plan,) = cursor.fetchone()
    plan = plan if isinstance(plan, list) else json.loads(plan)
    scans = {
        node["Node Type"]
        for node in _nodes(plan[0]["Plan"])
        if node.get("Relation Name") == "x_jobs"
    }
    assert "Seq Scan" not in scans, scans


def test_an_idle_connection_discards_its_plans_once_per_replan_statements_not_per_statement(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DISCARD PLANS is a transaction of its own: sent before every prepared statement of an
    idle worker (one every 10 to 60 s, each past REPLAN_SECONDS), it took that worker from 10 to
    16 statements a minute. It waits for REPLAN_STATEMENTS prepared statements as well."""
    sent: list[bytes] = []
    execute = psycopg.Cursor.execute

    def spy(self: psycopg.Cursor[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(query if isinstance(query, bytes) else str(query).encode())
        return execute(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", spy)
    monkeypatch.setattr(bound, "REPLAN_SECONDS", 0.0)
    driver = PostgresDriver()
    claims = 3 * bound.REPLAN_STATEMENTS
    for _ in range(claims):
        assert not driver.job_claim(queues=["default"], limit=10, worker_id="w", lease_seconds=30)
    discards = sent.count(b"discard plans")
    assert discards <= claims // bound.REPLAN_STATEMENTS, f"{discards} discards for {claims} claims"
    assert discards >= 2, "the plans were never discarded"
