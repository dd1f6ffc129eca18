"""``rollup()`` and ``refresh_view()``: one statement per run, as the job's one step."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.testapp.models import SweepRow
from ultimat3_jobs.errors import JobDeclarationInvalid
from ultimat3_jobs.factories import refresh_view, rollup
from ultimat3_jobs.models import Job, JobStep
from ultimat3_jobs.testing import run_enqueued

pytestmark = pytest.mark.django_db

totals = rollup(
    "tests.rollup.totals",
    source="select handled, count(*) from testapp_sweeprow where done = %(done)s group by handled",
    target="tests_rollup_totals",
    key=["handled"],
    columns=["handled", "rows"],
    params={"done": True},
)
view = refresh_view("tests.rollup.view", "tests_rollup_view")


@pytest.fixture
def tables() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "create table tests_rollup_totals (handled int primary key, rows bigint not null)"
        )
        cursor.execute(
            "create materialized view tests_rollup_view as "
            "select handled, count(*) as rows from testapp_sweeprow group by handled"
        )
        cursor.execute("create unique index on tests_rollup_view (handled)")


def read(table: str) -> list[tuple[int, int]]:
    with connection.cursor() as cursor:
        cursor.execute(f"select handled, rows from {table} order by handled")
        return list(cursor.fetchall())


def test_a_rollup_is_one_upsert_per_run(tables: None) -> None:
    SweepRow.objects.bulk_create(
        [SweepRow(handled=1, done=True)] * 3 + [SweepRow(handled=2, done=True), SweepRow()]
    )
    first = totals.enqueue()
    assert run_enqueued().completed == (first.id,)
    assert read("tests_rollup_totals") == [(1, 3), (2, 1)]
    assert Job.objects.get(id=first.id).result == {"rows": 2}
    assert list(JobStep.objects.filter(job_id=first.id).values_list("name", flat=True)) == [
        "upsert"
    ]
    SweepRow.objects.create(handled=2, done=True)
    second = totals.enqueue()
    run_enqueued()
    assert read("tests_rollup_totals") == [(1, 3), (2, 2)], "the conflict updates in place"
    assert Job.objects.get(id=second.id).result == {"rows": 2}


def test_a_view_refresh_is_one_statement(tables: None) -> None:
    SweepRow.objects.bulk_create([SweepRow(handled=4)] * 2)
    assert read("tests_rollup_view") == []
    result = view.enqueue()
    assert run_enqueued().completed == (result.id,)
    assert read("tests_rollup_view") == [(4, 2)]
    assert Job.objects.get(id=result.id).result == {"refreshed": True}


@pytest.mark.parametrize(
    ("options", "rule"),
    [
        ({"source": "delete from x"}, "source must be a SELECT"),
        ({"target": "x; drop table y"}, "target must be an SQL name"),
        ({"key": []}, "key must be a non-empty list"),
        ({"key": ["other"]}, "key must be among the columns"),
        ({"columns": "a"}, "columns must be a non-empty list"),
    ],
)
def test_a_bad_rollup_is_refused_naming_the_option(options, rule) -> None:
    declared = {
        "source": "select 1, 2",
        "target": "t",
        "key": ["a"],
        "columns": ["a", "b"],
        **options,
    }
    with pytest.raises(JobDeclarationInvalid, match=rule):
        rollup("tests.rollup.bad", **declared)


def test_a_bad_view_name_is_refused() -> None:
    with pytest.raises(JobDeclarationInvalid, match="view must be an SQL name"):
        refresh_view("tests.rollup.badview", "v; drop")
