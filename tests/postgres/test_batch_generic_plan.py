"""The worker's batch statements (its settles and its heartbeat) keep the plan cache's generic
plan on a prepared session, whatever their batches' lengths (``batch_array`` in
``sql/jobs.sql``): a batch of one was planned afresh on every run, about half of the backend CPU
of an ack of one job. The generic plans land every given row, on a backlog of a million queued
jobs too (marked slow; the unmarked run has a tenth of it): no plan sees the arrays, so each
must still reach every row the batch names."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection

from tests.postgres.support import fill_queued
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.drivers.postgres.queries import STATEMENTS
from ultimat3_jobs.types import ClaimedJob, SettleItem

pytestmark = pytest.mark.django_db(transaction=True)

BATCH_STATEMENTS = ("job_heartbeat_many", "job_ack_many", "job_settle_many", "job_settle_handoff")
CUSTOM_FIRST = 5
"""The custom plans PostgreSQL's plan cache makes of a prepared statement before it weighs the
generic one."""
RUNS = CUSTOM_FIRST + 3


@pytest.fixture(autouse=True)
def _fresh_connection() -> Iterator[None]:
    """Each test connects anew (no statement prepared yet), and leaves no dead connection."""
    connection.close()
    yield
    connection.close()


def _plans() -> dict[str, tuple[int, int]]:
    """(generic, custom) plans so far of each batch statement this session prepared."""
    with connection.cursor() as cursor:
        cursor.execute("select statement, generic_plans, custom_plans from pg_prepared_statements")
        rows = cursor.fetchall()
    return {
        name: (int(generic), int(custom))
        for name in BATCH_STATEMENTS
        for text, generic, custom in rows
        if STATEMENTS[name].split("\n")[0] in text
    }


def _items(jobs: list[ClaimedJob], action: str) -> list[SettleItem]:
    return [SettleItem(job_id=j.id, claim_token=j.claim_token, action=action) for j in jobs]


def _run_each(driver: PostgresDriver, per_statement: int) -> None:
    """One run of each batch statement, each with ``per_statement`` rows that must land: a beat,
    an ack (``job_ack_many``), a flush with a failure (``job_settle_many``), a hand-off."""
    jobs = driver.job_claim(
        queues=["default"], limit=3 * per_statement, worker_id="w", lease_seconds=60
    )
    assert len(jobs) == 3 * per_statement
    acked, failed, handed = (jobs[i::3] for i in range(3))
    beat = driver.job_heartbeat_many(
        attempts=[(j.id, j.claim_token) for j in jobs], lease_seconds=60
    )
    assert beat.renewed == {j.id for j in jobs}
    assert driver.job_settle_many(items=_items(acked, "complete")) == {j.id for j in acked}
    assert driver.job_settle_many(items=_items(failed, "fail")) == {j.id for j in failed}
    handoff = driver.job_settle_handoff(items=_items(handed, "complete"), runs=[])
    assert handoff.landed == {j.id for j in handed}


def test_a_batch_of_one_keeps_the_generic_plan(driver: PostgresDriver) -> None:
    fill_queued(3 * RUNS)
    for _ in range(RUNS):
        _run_each(driver, 1)
    assert _plans() == dict.fromkeys(BATCH_STATEMENTS, (RUNS - CUSTOM_FIRST, CUSTOM_FIRST))


@pytest.mark.parametrize(
    "backlog", [100_000, pytest.param(1_000_000, marks=pytest.mark.slow)], ids=["100k", "1M"]
)
def test_the_generic_plans_land_every_row_at_a_large_backlog(
    driver: PostgresDriver, backlog: int
) -> None:
    fill_queued(backlog)
    for _ in range(RUNS):
        _run_each(driver, 1)  # the generic plans, from here on
    _run_each(driver, 100)
    assert _plans() == dict.fromkeys(BATCH_STATEMENTS, (RUNS + 1 - CUSTOM_FIRST, CUSTOM_FIRST))
    with connection.cursor() as cursor:
        cursor.execute("select state, count(*) from x_jobs group by state")
        counts = dict(cursor.fetchall())
    settled = 3 * (RUNS + 100)
    assert counts == {
        "queued": backlog - settled,
        "completed": 2 * (RUNS + 100),
        "failed": RUNS + 100,
    }
