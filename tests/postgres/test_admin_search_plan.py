"""The admin's search by idempotency key and its tenant filter read an index, not the table.

The statements are the ones the job changelist issues (captured from a real request), run
under ``EXPLAIN`` on a table of many jobs: none may scan ``x_jobs`` sequentially. A million
rows is the figure the issue names (marked slow); the unmarked run has a tenth of it, which
already makes a sequential scan the planner's choice without the indexes.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/ultimat3_jobs/job/"
TENANTS = 50
KEY_EVERY = 4
"""One job in ``KEY_EVERY`` has an idempotency key; tenants take the rows in turn."""


def fill(rows: int) -> None:
    """``rows`` jobs in one statement: mostly finished, as a table that keeps its history is,
    over ``TENANTS`` tenants, a key on one in ``KEY_EVERY``; then fresh statistics."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            insert into x_jobs (id, name, queue, state, run_at, input, idempotency_key,
                                tenant_id, created_at, finished_at)
            select gen_random_uuid(),
                   'tests.n' || (g %% 20),
                   case when g %% 2 = 0 then 'default' else 'emails' end,
                   case when g %% 100 = 0 then 'queued' when g %% 100 = 1 then 'failed'
                        else 'completed' end,
                   now() - make_interval(secs => g),
                   '{}'::jsonb,
                   case when g %% %(key_every)s = 0 then 'order-' || g end,
                   'org-' || (g %% %(tenants)s),
                   now() - make_interval(secs => g),
                   case when g %% 100 = 0 then null else now() - make_interval(secs => g) end
            from generate_series(1, %(rows)s) as g
            """,
            {"rows": rows, "tenants": TENANTS, "key_every": KEY_EVERY},
        )
        cursor.execute("analyze x_jobs")


def admin_queries(path: str) -> list[str]:
    """The statements on ``x_jobs`` that one changelist request issues."""
    user = User.objects.create_superuser(f"admin{time.monotonic_ns()}", "a@example.com", "pw")
    client = Client()
    client.force_login(user)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(CHANGELIST + path)
    assert response.status_code == 200
    found = [q["sql"] for q in captured.captured_queries if '"x_jobs"' in q["sql"]]
    assert found, f"{path}: the changelist read no jobs"
    return found


def plan_nodes(sql: str) -> list[dict[str, Any]]:
    with connection.cursor() as cursor:
        cursor.execute("explain (format json) " + sql)
        raw = cursor.fetchone()[0]
    plan = raw if isinstance(raw, list) else json.loads(raw)
    nodes, todo = [], [plan[0]["Plan"]]
    while todo:
        node = todo.pop()
        nodes.append(node)
        todo.extend(node.get("Plans", []))
    return nodes


def assert_no_sequential_scan(rows: int) -> None:
    fill(rows)
    key = f"order-{KEY_EVERY * 1000}"
    cases = {
        "search by key": f"?q={key}",
        "search by a key no job has": "?q=no-such-key",
        "tenant filter": "?tenant=org-7",
        "tenant filter, failed jobs": "?tenant=org-7&state__exact=failed",
    }
    for case, path in cases.items():
        for sql in admin_queries(path):
            nodes = plan_nodes(sql)
            scans = [
                n
                for n in nodes
                if n["Node Type"] == "Seq Scan" and n.get("Relation Name") == "x_jobs"
            ]
            assert not scans, f"{case}: Seq Scan on x_jobs in the plan of {sql}"
            used = {n.get("Index Name") for n in nodes}
            expected = "x_jobs_key_search" if "search" in case else "x_jobs_tenant"
            assert expected in used, f"{case}: {expected} not used by {sql}: {used}"


def test_admin_search_and_tenant_filter_use_indexes() -> None:
    assert_no_sequential_scan(100_000)


@pytest.mark.slow
def test_admin_search_and_tenant_filter_use_indexes_on_a_million_jobs() -> None:
    assert_no_sequential_scan(1_000_000)
