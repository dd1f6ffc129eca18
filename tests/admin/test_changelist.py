"""The job changelist: a page costs a fixed number of queries and never a COUNT; search is an
exact id or key; filters; newest first; pages by a look-ahead row."""

from __future__ import annotations

import itertools
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.admin.conftest import job_in_state
from tests.drivers.support import enqueue
from tests.factories import JobFactory, attempt_error
from ultimat3_jobs.admin.changelist import LIST_COLUMNS
from ultimat3_jobs.admin.paginator import WindowPaginator
from ultimat3_jobs.models import Job

CHANGELIST = "/admin/ultimat3_jobs/job/"
_serial = itertools.count()


def listed_ids(html: str) -> list[str]:
    return re.findall(r'name="_selected_action" value="([0-9a-f-]{36})"', html)


def page_queries(client, url: str) -> tuple[list[str], str]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return [query["sql"] for query in captured.captured_queries], response.content.decode()


def add_jobs(count: int) -> None:
    """``count`` jobs of distinct tenants: one in three failed after two attempts, each with
    its traceback; the others queued, each with an idempotency key."""
    for _ in range(count):
        n = next(_serial)
        if n % 3 == 0:
            errors = [attempt_error(1), attempt_error(2)]
            JobFactory(failed=True, attempt=2, errors=errors, tenant_id=f"t{n}")
        else:
            JobFactory(idempotency_key=f"key-{n}", tenant_id=f"t{n}")


def test_a_page_of_100_costs_the_queries_of_a_page_of_10(
    role_client, jobs_driver, django_assert_max_num_queries
):
    client = role_client("superuser")
    client.get(CHANGELIST)  # the session and the user are loaded the same way on every page
    add_jobs(10)
    small, html = page_queries(client, CHANGELIST)
    assert len(listed_ids(html)) == 10
    add_jobs(140)
    large, html = page_queries(client, CHANGELIST)
    assert len(listed_ids(html)) == 100
    assert len(large) == len(small)
    deeper, html = page_queries(client, f"{CHANGELIST}?p=2")
    assert len(listed_ids(html)) == 50
    assert len(deeper) == len(small)
    # One query reads the jobs: a window of per_page + 1 rows, and only the listed columns.
    reads = [sql for sql in large if '"x_jobs"' in sql]
    assert len(reads) == 1, reads
    assert reads[0].endswith("LIMIT 101")
    assert '"x_jobs"."input"' not in reads[0]
    assert '"x_jobs"."result"' not in reads[0]
    for sql in [*small, *large, *deeper]:
        assert "COUNT(" not in sql.upper(), sql
        assert "DISTINCT" not in sql.upper(), sql
    # A superuser's page: the session, the user, the jobs.
    with django_assert_max_num_queries(3):
        assert client.get(CHANGELIST).status_code == 200


def test_a_viewer_page_costs_a_fixed_number_of_queries_too(role_client, jobs_driver):
    client = role_client("operator")  # permissions read from the database, once per request
    client.get(CHANGELIST)
    add_jobs(5)
    small, _ = page_queries(client, CHANGELIST)
    add_jobs(120)
    large, _ = page_queries(client, CHANGELIST)
    assert len(large) == len(small)


@pytest.mark.parametrize(
    "query",
    [
        "?state__exact=failed",
        "?queue=default",
        "?name=tests.echo",
        "?tenant=t3",
        "?q=key-4",
        "?state__exact=failed&queue=default&name=tests.echo&tenant=t3",
    ],
)
def test_filtered_pages_cost_the_same_and_never_count(query, role_client, jobs_driver):
    client = role_client("superuser")
    client.get(CHANGELIST)
    add_jobs(12)
    baseline, _ = page_queries(client, CHANGELIST)
    filtered, _ = page_queries(client, CHANGELIST + query)
    assert len(filtered) == len(baseline)
    assert not any("COUNT(" in sql.upper() for sql in filtered)


def test_newest_first_and_pages_by_a_look_ahead_row(role_client, jobs_driver, settings):
    ids = [str(enqueue(jobs_driver)) for _ in range(5)]
    # created_at is the store's clock, the same for one transaction: spread them out.
    for offset, job_id in enumerate(ids):
        Job.objects.filter(id=job_id).update(
            created_at=Job.objects.get(id=job_id).created_at.replace(microsecond=offset)
        )
    client = role_client("superuser")
    from django.contrib import admin

    job_admin = admin.site._registry[Job]
    original = job_admin.list_per_page
    job_admin.list_per_page = 2
    try:
        first = client.get(CHANGELIST).content.decode()
        second = client.get(f"{CHANGELIST}?p=2").content.decode()
        third = client.get(f"{CHANGELIST}?p=3").content.decode()
        beyond = client.get(f"{CHANGELIST}?p=4")
    finally:
        job_admin.list_per_page = original
    assert listed_ids(first) == ids[::-1][:2]
    assert listed_ids(second) == ids[::-1][2:4]
    assert listed_ids(third) == ids[::-1][4:]
    assert "Older" in first and "Newer" not in first
    assert "Older" in second and "Newer" in second
    assert "Older" not in third and "Newer" in third
    assert beyond.status_code == 302  # Django's answer to a page that does not exist
    assert "?e=1" in beyond["Location"]


def test_search_is_an_exact_id_or_an_exact_key(role_client, jobs_driver):
    target = enqueue(jobs_driver, idempotency_key="order-42")
    other = enqueue(jobs_driver, idempotency_key="order-421")
    client = role_client("superuser")
    assert listed_ids(client.get(f"{CHANGELIST}?q=order-42").content.decode()) == [str(target)]
    assert listed_ids(client.get(f"{CHANGELIST}?q={other}").content.decode()) == [str(other)]
    assert listed_ids(client.get(f"{CHANGELIST}?q=+{target}+").content.decode()) == [str(target)]
    assert listed_ids(client.get(f"{CHANGELIST}?q=order").content.decode()) == []
    with CaptureQueriesContext(connection) as captured:
        client.get(f"{CHANGELIST}?q=order-42")
    sql = " ".join(query["sql"] for query in captured.captured_queries)
    assert "LIKE" not in sql.upper()
    assert '"x_jobs"."idempotency_key" = ' in sql


def test_filters_narrow_the_list(role_client, jobs_driver):
    failed = job_in_state(jobs_driver, "failed", name="tests.add", queue="math", tenant_id="acme")
    queued = enqueue(jobs_driver, name="tests.echo", queue="default", tenant_id="other")
    client = role_client("superuser")

    def ids(query: str) -> set[str]:
        return set(listed_ids(client.get(CHANGELIST + query).content.decode()))

    assert ids("") == {str(failed), str(queued)}
    assert ids("?state__exact=failed") == {str(failed)}
    assert ids("?queue=math") == {str(failed)}
    assert ids("?name=tests.echo") == {str(queued)}
    assert ids("?tenant=acme") == {str(failed)}
    assert ids("?tenant=acme&state__exact=queued") == set()
    # A queue or name no job declares can still be asked for, and is shown as a choice.
    html = client.get(f"{CHANGELIST}?queue=undeclared").content.decode()
    assert "?queue=undeclared" in html


def test_the_changelist_shows_no_input_and_no_counts(role_client, jobs_driver):
    enqueue(jobs_driver, input_json='{"visible_only_on_the_job_page": "xyzzy"}')
    html = role_client("superuser").get(CHANGELIST).content.decode()
    assert "xyzzy" not in html
    assert "Show all" not in html
    assert "Select all 1 " not in html and "Select all 2 " not in html


def test_rows_are_read_only(role_client, jobs_driver):
    job_id = enqueue(jobs_driver)
    client = role_client("superuser")
    assert client.get(f"{CHANGELIST}add/").status_code == 403
    assert client.post(f"{CHANGELIST}{job_id}/change/", {"name": "x"}).status_code == 403
    assert client.get(f"{CHANGELIST}{job_id}/delete/").status_code == 403
    assert Job.objects.get(id=job_id).name == "tests.echo"


def test_window_paginator_reads_one_window():
    rows = list(range(25))
    paginator = WindowPaginator(rows, 10, page_number=2)
    assert paginator.count == 21  # offset 10 + 10 rows + the look-ahead row
    assert paginator.num_pages == 3
    assert paginator.has_next
    assert list(paginator.page(2).object_list) == list(range(10, 20))
    last = WindowPaginator(rows, 10, page_number=3)
    assert last.count == 25 and not last.has_next
    assert list(last.page(3).object_list) == [20, 21, 22, 23, 24]
    assert list(last.page(1).object_list) == list(range(10))


def test_list_columns_hold_no_payload():
    assert not {"input", "result", "progress", "errors"} & set(LIST_COLUMNS)


@pytest.mark.parametrize(
    "lookup",
    [
        "input__api_token__startswith=sk",
        "input__icontains=SENTINEL",
        "result__token=x",
        "errors__0__message__startswith=b",
        "progress__isnull=False",
        "idempotency_key__startswith=order",
        "claim_token__isnull=False",
    ],
)
@pytest.mark.parametrize("role", ["viewer", "superuser"])
def test_no_lookup_but_the_filters_is_taken_from_the_url(lookup, role, role_client, jobs_driver):
    # Django lets a URL filter on any column of the model by default: an oracle on redacted
    # input. Only the filters' own parameters are taken.
    enqueue(jobs_driver, name="tests.secret", input_json='{"account": 1, "api_token": "sk_x"}')
    response = role_client(role).get(f"{CHANGELIST}?{lookup}")
    assert response.status_code == 400


def test_both_orders_follow_the_newest_index(role_client, jobs_driver):
    enqueue(jobs_driver)
    client = role_client("superuser")
    for query, expected in [
        ("", 'ORDER BY "x_jobs"."created_at" DESC, "x_jobs"."id" DESC'),
        ("?o=7", 'ORDER BY "x_jobs"."created_at" ASC, "x_jobs"."id" ASC'),
        ("?o=-7", 'ORDER BY "x_jobs"."created_at" DESC, "x_jobs"."id" DESC'),
    ]:
        sql, _ = page_queries(client, CHANGELIST + query)
        assert any(expected in statement for statement in sql), (query, sql)
