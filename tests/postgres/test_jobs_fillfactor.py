"""A job's state changes write new row versions; x_jobs leaves room on each page (migration
0016, fillfactor 50), so the claim's version stays on the row's own page: no second page
dirtied, no extra lock record in the WAL, a smaller update record."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.drivers.support import request
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver

pytestmark = pytest.mark.django_db

JOBS = 120  # several heap pages, full ones included at the default fillfactor


def _pages() -> dict[str, int]:
    with connection.cursor() as cursor:
        cursor.execute("select id::text, (ctid::text::point)[0]::int from x_jobs")
        return dict(cursor.fetchall())


def _stayed(before: dict[str, int], after: dict[str, int]) -> int:
    return sum(1 for job_id, page in before.items() if after[job_id] == page)


def test_the_claim_keeps_most_row_versions_on_their_page() -> None:
    driver = PostgresDriver()
    driver.job_enqueue_many(requests=[request(input_json="{}") for _ in range(JOBS)])
    queued = _pages()
    claimed = driver.job_claim(queues=["default"], limit=JOBS, worker_id="w", lease_seconds=30)
    assert len(claimed) == JOBS
    running = _pages()
    # At fillfactor 100 every full page sends its rows' versions elsewhere: about a tenth stay.
    assert _stayed(queued, running) >= JOBS // 2


def test_the_jobs_table_asks_for_half_full_pages() -> None:
    with connection.cursor() as cursor:
        cursor.execute("select reloptions from pg_class where relname = 'x_jobs'")
        assert cursor.fetchone()[0] == ["fillfactor=50"]
