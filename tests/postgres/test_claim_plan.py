"""The claim seeks: at a realistic depth its plan walks x_jobs_claim in claim order and stops,
with no Sort under the LockRows node, for one queue and for several; and what one claim reads
does not grow with the rows it cannot take (a paused name's backlog, future rows)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection, transaction

from tests.drivers.support import request
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
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


def _plan(queues: list[str], limit: int, *, analyze: bool = False) -> dict[str, Any]:
    params = {"queues": queues, "limit": limit, "worker_id": "w", "lease_seconds": 30.0}
    explain = "explain (analyze, format json) " if analyze else "explain (format json) "
    with connection.cursor() as cursor:
        cursor.execute(explain + STATEMENTS["job_claim"], params)
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
    plan = _plan(queues, limit=100, analyze=True)
    lock_rows = [node for node in _nodes(plan) if node["Node Type"] == "LockRows"]
    assert lock_rows, "the claim must lock the rows it takes"
    for lock in lock_rows:
        below = _nodes(lock)[1:]
        assert not [n for n in below if n["Node Type"] in {"Sort", "Incremental Sort"}]
        assert any(n.get("Index Name") == "x_jobs_claim" for n in below)
    # The only sort left merges at most limit rows per queue, above the seeks. (Rows sorted,
    # not the planner's estimate: the limit reaches the planner as a subquery, so it estimates
    # a tenth of the rows; see job_claim.)
    for node in _nodes(plan):
        if node["Node Type"] == "Sort":
            assert node["Actual Rows"] <= 100 * len(queues)


# -- the claim's cost does not grow with backlogs it cannot take ----------------------------------

# Index entries a claim of 100 may read from x_jobs_claim, and index pages it may touch: the
# claimed rows, a few per priority level, and the btree descents; never a backlog.
CLAIM_ENTRIES_BOUND = 300
CLAIM_INDEX_PAGES_BOUND = 40


def _held_backlogs(*, paused: int, future: int) -> None:
    """In one queue: ``paused`` rows of a paused job name, due, at the highest priority;
    ``future`` rows due tomorrow at the next priority; and 500 due rows at priorities 0 to 2."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            insert into x_jobs (id, name, queue, priority, run_at, input)
            select gen_random_uuid(),
                   case when g <= %(paused)s then 'tests.held'
                        when g <= %(paused)s + %(future)s then 'tests.later'
                        else 'tests.noop' end,
                   'default',
                   case when g <= %(paused)s then 20
                        when g <= %(paused)s + %(future)s then 10
                        else g %% 3 end,
                   case when g <= %(paused)s + %(future)s and g > %(paused)s
                        then now() + make_interval(days => 1, secs => g)
                        else now() - make_interval(secs => g) end,
                   '{}'::jsonb
            from generate_series(1, %(paused)s + %(future)s + 500) as g
            """,
            {"paused": paused, "future": future},
        )
    # Through the verb, so whatever it does to a paused name's rows happens here too; then the
    # vacuum that follows any large update (the first claim after the pause commits may step
    # over the dead entries its flagging left in the index, once: it marks them dead).
    assert PostgresDriver().pause_add(scope="job", target="tests.held")
    with connection.cursor() as cursor:
        cursor.execute("vacuum analyze x_jobs")
        cursor.execute("analyze x_job_pauses")


def _claim_reads(limit: int, queue: str = "default") -> tuple[list[tuple[str, int]], int, int]:
    """Claim once, in a transaction; answer the (name, priority) of the rows claimed and the
    x_jobs_claim entries and pages it read (that transaction's counters, before and after)."""
    counters = """
        select pg_stat_get_xact_tuples_returned('x_jobs_claim'::regclass),
               pg_stat_get_xact_blocks_fetched('x_jobs_claim'::regclass)
    """
    params = {"queues": [queue], "limit": limit, "worker_id": "w", "lease_seconds": 30.0}
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(counters)
        entries_before, pages_before = cursor.fetchone()
        cursor.execute(STATEMENTS["job_claim"], params)
        claimed = [(row[1], row[7]) for row in cursor.fetchall()]
        cursor.execute(counters)
        entries_after, pages_after = cursor.fetchone()
    return claimed, entries_after - entries_before, pages_after - pages_before


def _assert_claim_is_cheap(*, paused: int, future: int) -> None:
    _held_backlogs(paused=paused, future=future)
    claimed, entries, pages = _claim_reads(100)
    # The best due rows (the 167 at priority 2 come first); none of the held or future rows.
    assert claimed == [("tests.noop", 2)] * 100
    assert entries <= CLAIM_ENTRIES_BOUND, f"the claim read {entries} index entries"
    assert pages <= CLAIM_INDEX_PAGES_BOUND, f"the claim touched {pages} index pages"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("paused", "future"),
    [(30_000, 0), (0, 30_000), (30_000, 30_000)],
    ids=["paused", "future", "both"],
)
def test_claim_reads_neither_a_paused_backlog_nor_future_rows(paused: int, future: int) -> None:
    _assert_claim_is_cheap(paused=paused, future=future)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_claim_reads_neither_at_300k_backlogs() -> None:
    _assert_claim_is_cheap(paused=300_000, future=300_000)


def test_jobs_enqueued_under_a_pause_stay_out_of_the_claims_way() -> None:
    # A queue of its own: the rolled-back rows of other tests leave dead entries in the index
    # until a vacuum, and a claim steps over those it meets.
    driver = PostgresDriver()
    queue = "claim-cost"
    assert driver.pause_add(scope="job", target="tests.held")
    for _ in range(3):
        driver.job_enqueue_many(
            requests=[request(name="tests.held", queue=queue) for _ in range(1000)]
        )
    for _ in range(20):
        driver.job_enqueue(request=request(name="tests.held", queue=queue))
    driver.job_enqueue_many(requests=[request(name="tests.noop", queue=queue) for _ in range(10)])
    claimed, entries, _ = _claim_reads(5, queue)
    assert claimed == [("tests.noop", 0)] * 5
    assert entries <= 10, f"the claim read {entries} index entries"
