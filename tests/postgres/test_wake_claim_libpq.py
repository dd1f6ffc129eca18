"""The wake's claim on the listening connection (``notified.py``) goes to libpq in one call: no
psycopg cursor, query conversion, dumper or column description on the wake's path; the same
row, fences and preparation as through a cursor."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from types import FrameType
from typing import Any

import psycopg
import pytest
from django.db import connection

from tests.drivers.support import enqueue
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.drivers.postgres.listen import connection_params
from ultimat3_jobs.drivers.postgres.notified import PREPARED_NAME, claim_notified
from ultimat3_jobs.types import ClaimedJob

pytestmark = pytest.mark.django_db(transaction=True)

ODD_QUEUE = 'odd "q\\,{x}'
"""A queue name the text[] literal must quote: a quote, a backslash, a comma and braces."""
CLAIM_CALLS = 60
"""The Python calls one claim may make (46 prepared, 53 unprepared; through a cursor about 340)."""


@pytest.fixture
def session() -> Iterator[psycopg.Connection[Any]]:
    params = connection_params("default", "test_wake_claim_libpq")
    params.pop("prepare_threshold", None)
    with psycopg.connect(**params, autocommit=True) as conn:
        yield conn


def _claim(
    session: psycopg.Connection[Any],
    job_id: uuid.UUID,
    *,
    prepare: bool,
    lease_seconds: float = 45.0,
) -> Any:
    return claim_notified(
        session,
        job_id=job_id,
        queues=["default", ODD_QUEUE],
        worker_id="w-libpq",
        lease_seconds=lease_seconds,
        prepare=prepare,
    )


def _counted(call: Any) -> tuple[Any, list[str]]:
    """``call()``'s answer and the Python functions it called, as ``file:name``."""
    called: list[str] = []

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            called.append(f"{frame.f_code.co_filename}:{frame.f_code.co_name}")

    sys.setprofile(profile)
    try:
        answer = call()
    finally:
        sys.setprofile(None)
    return answer, called


@pytest.mark.parametrize("prepare", [True, False])
def test_the_claim_takes_no_psycopg_cursor_and_reads_the_row(
    driver: PostgresDriver, session: psycopg.Connection[Any], prepare: bool
) -> None:
    _claim(session, uuid.uuid4(), prepare=prepare)  # first run: prepared when asked
    job_id = enqueue(driver, queue=ODD_QUEUE, input_json='{"n": [1, "two"]}', priority=3)
    job, called = _counted(lambda: _claim(session, job_id, prepare=prepare))
    assert isinstance(job, ClaimedJob) and job.id == job_id and job.queue == ODD_QUEUE
    assert job.input == {"n": [1, "two"]} and job.priority == 3 and job.attempt == 1
    with connection.cursor() as cursor:
        cursor.execute("select state, worker_id, claim_token from x_jobs where id = %s", [job_id])
        assert cursor.fetchone() == ("running", "w-libpq", job.claim_token)
    through_cursor = [name for name in called if "cursor" in name.rsplit("/", 1)[-1]]
    assert through_cursor == [] and len(called) <= CLAIM_CALLS, called
    assert _claim(session, job_id, prepare=prepare) is None  # running now: fenced
    prepared = session.execute("select name from pg_prepared_statements", prepare=False)
    assert prepared.fetchall() == ([(PREPARED_NAME.decode(),)] if prepare else [])
    # A failed statement raises psycopg's error of its SQLSTATE; the session stays usable.
    other = enqueue(driver)
    with pytest.raises(psycopg.errors.DataError):  # the lease's interval is out of range
        _claim(session, other, prepare=prepare, lease_seconds=1e300)
    assert _claim(session, other, prepare=prepare).id == other
