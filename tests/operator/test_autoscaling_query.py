"""The autoscaling guide's SQL, run as written on the real schema: a backlog with no worker
answers its due jobs, running jobs count, a paused queue answers only its running jobs; the
KEDA example carries the same query."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from tests.drivers.support import HOUR, claim_one, enqueue
from tests.factories import JobFactory
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver

pytestmark = pytest.mark.django_db

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "autoscaling.md"


def _normalised(sql: str) -> str:
    return " ".join(sql.split())


def guide_query() -> str:
    text = GUIDE.read_text()
    blocks = re.findall(r"```sql\n(.*?)```", text, re.DOTALL)
    assert len(blocks) == 1, "the guide shows one query"
    return blocks[0]


def keda_query() -> str:
    """The ``query: >-`` folded scalar of the ScaledObject example."""
    (yaml,) = re.findall(r"```yaml\n(.*?)```", GUIDE.read_text(), re.DOTALL)
    lines = yaml.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "query: >-")
    indent = len(lines[start + 1]) - len(lines[start + 1].lstrip())
    body = []
    for line in lines[start + 1 :]:
        if len(line) - len(line.lstrip()) < indent:
            break
        body.append(line)
    return "\n".join(body)


def answer() -> int:
    with connection.cursor() as cursor:
        cursor.execute(guide_query())
        (value,) = cursor.fetchone()
    return int(value)


def test_the_keda_example_runs_the_guide_query() -> None:
    assert _normalised(keda_query()) == _normalised(guide_query())


def test_the_query_answers_a_backlog_with_no_worker() -> None:
    driver = PostgresDriver()
    assert answer() == 0
    for _ in range(3):
        enqueue(driver, queue="emails")
    JobFactory(queue="emails", run_at=timezone.now() + HOUR)
    enqueue(driver, queue="default")
    assert driver.worker_list() == []
    assert answer() == 3

    claim_one(driver, ("emails",))
    assert answer() == 3  # 2 due + 1 running

    driver.queue_pause(queue="emails")
    assert answer() == 1  # only the running job


def test_the_query_can_read_the_claim_index() -> None:
    # The index's predicate must be implied by the query's conditions, or no plan can use it.
    with connection.cursor() as cursor:
        cursor.execute("set local enable_seqscan = off")
        cursor.execute("explain " + guide_query())
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "x_jobs_claim" in plan, plan
