"""Every claim of a deep backlog takes what it asks for, on its custom plans and after the plan
cache moves to a generic one (it compares five custom plans first): 8 claims of 90 from 100,000
and from 1,000,000 queued rows take 90 each. And the plan the claim runs on costs the planner
no more at a deeper backlog: a claim whose limit the planner could not see (a subquery) was
estimated at a tenth of the backlog, costed past ``jit_above_cost`` at 1,000,000 rows, and was
compiled by JIT on every run (tens of milliseconds a claim; see job_claim in jobs.sql)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection

from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.drivers.postgres.params import CLAIM_CHUNK
from ultimat3_jobs.drivers.postgres.queries import STATEMENTS

pytestmark = pytest.mark.django_db(transaction=True)

CLAIMS = 8  # past the plan cache's five custom plans
LIMIT = 90


@pytest.fixture(autouse=True)
def _fresh_connection() -> Iterator[None]:
    """Each test connects anew (no statement prepared yet), and leaves no dead connection."""
    connection.close()
    yield
    connection.close()


def _fill(depth: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            insert into x_jobs (id, name, queue, input)
            select gen_random_uuid(), 'tests.noop', 'default', '{}'::jsonb
            from generate_series(1, %(depth)s)
            """,
            {"depth": depth},
        )
        cursor.execute("analyze x_jobs")


def _plan(sql: str, params: Any = None) -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute("explain (format json) " + sql, params)
        (raw,) = cursor.fetchone()
    return (raw if isinstance(raw, list) else json.loads(raw))[0]


def _jit_above_cost() -> float:
    with connection.cursor() as cursor:
        cursor.execute("select current_setting('jit_above_cost')::float8")
        return cursor.fetchone()[0]


def _claims(depth: int) -> list[int]:
    """The jobs each of CLAIMS claims takes from ``depth`` queued rows; then the plan the
    prepared claim runs on (generic or custom, whichever the plan cache chose) is not JIT'd."""
    _fill(depth)
    driver = PostgresDriver()
    try:
        taken = [
            len(driver.job_claim(queues=["default"], limit=LIMIT, worker_id="w", lease_seconds=60))
            for _ in range(CLAIMS)
        ]
    finally:
        driver.close()
    first_line = STATEMENTS["job_claim"].split("\n")[0]
    with connection.cursor() as cursor:
        cursor.execute(
            "select name from pg_prepared_statements where strpos(statement, %s) > 0", [first_line]
        )
        names = [name for (name,) in cursor.fetchall()]
    for name in names:  # none when the connection does not prepare
        plan = _plan(f"execute {name}('{{default}}', {LIMIT}, 'w', 60)")
        assert "JIT" not in plan
        assert plan["Plan"]["Total Cost"] < _jit_above_cost()
    return taken


def test_every_claim_of_a_backlog_of_100_000_takes_its_limit() -> None:
    assert _claims(100_000) == [LIMIT] * CLAIMS


@pytest.mark.slow
def test_every_claim_of_a_backlog_of_1_000_000_takes_its_limit() -> None:
    assert _claims(1_000_000) == [LIMIT] * CLAIMS


def test_the_claim_costs_no_more_at_ten_times_the_backlog() -> None:
    params = {"queues": ["default"], "limit": LIMIT, "worker_id": "w", "lease_seconds": 60.0}
    costs = []
    for depth in (10_000, 90_000):  # 10,000 queued rows, then 100,000
        _fill(depth)
        costs.append(_plan(STATEMENTS["job_claim"], params)["Plan"]["Total Cost"])
    shallow, deep = costs
    assert deep < 3 * shallow, f"estimated cost {shallow:.0f} at 10,000 rows, {deep:.0f} at 100,000"


def test_a_claim_of_more_than_a_statement_takes_runs_one_statement_per_chunk() -> None:
    """A statement takes CLAIM_CHUNK at most (its per-queue limit); a claim of more takes the
    rest with further statements, still highest priority first."""
    assert f"limit {CLAIM_CHUNK} " in STATEMENTS["job_claim"]
    _fill(CLAIM_CHUNK + 600)
    with connection.cursor() as cursor:
        cursor.execute(
            "update x_jobs set priority = 5 "
            "where id in (select id from x_jobs order by id limit 300)"
        )
    driver = PostgresDriver()
    try:
        taken = driver.job_claim(
            queues=["default"], limit=CLAIM_CHUNK + 500, worker_id="w", lease_seconds=60
        )
    finally:
        driver.close()
    assert len({job.id for job in taken}) == CLAIM_CHUNK + 500
    assert sum(job.priority == 5 for job in taken) == 300
