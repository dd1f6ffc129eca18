"""The PostgreSQL driver and outbox raise the seam's errors, never Django's or psycopg's: a lost
connection is ``DriverUnavailable`` (the runtime resets its connection and retries), a write the
database refuses is ``StoreRefused`` (never retried as it is), told without the row.

A killed backend would break a test transaction, so these tests run outside one."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from django.db import DatabaseError, InterfaceError, OperationalError, connections

from tests.postgres.support import terminate_backend
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.drivers.postgres.outbox import PostgresOutbox
from ultimat3_jobs.errors import DriverUnavailable, StoreRefused
from ultimat3_jobs.types import AckItem, ClaimedJob, EnqueueRequest, new_job_id

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fresh_connection() -> Iterator[None]:
    """A test that fails after killing its backend leaves no dead connection to the next."""
    yield
    connections["default"].close()


def _own_backend() -> int:
    """The pid of this thread's session on the default alias (the one the driver uses)."""
    with connections["default"].cursor() as cursor:
        cursor.execute("select pg_backend_pid()")
        return int(cursor.fetchone()[0])


def _claim(driver: PostgresDriver) -> list[ClaimedJob]:
    return driver.job_claim(queues=["default"], limit=1, worker_id="w-seam", lease_seconds=30)


def _unavailable(caught: pytest.ExceptionInfo[DriverUnavailable]) -> None:
    lost = caught.value
    assert lost.code == "X_DRIVER_UNAVAILABLE"
    assert not isinstance(lost, (DatabaseError, psycopg.Error))
    assert isinstance(lost.__cause__, (OperationalError, InterfaceError))


def test_a_killed_backend_raises_driver_unavailable_then_reconnects() -> None:
    driver = PostgresDriver(database="default")
    assert _claim(driver) == []
    terminate_backend(_own_backend())
    with pytest.raises(DriverUnavailable) as caught:
        _claim(driver)
    _unavailable(caught)
    driver.reset_connection()
    assert _claim(driver) == []


def test_the_outbox_raises_driver_unavailable_for_a_killed_backend() -> None:
    outbox = PostgresOutbox(database="default")
    assert outbox.outbox_claim(relay_id="r-seam", limit=1, lease_seconds=30) == []
    terminate_backend(_own_backend())
    with pytest.raises(DriverUnavailable) as caught:
        outbox.outbox_claim(relay_id="r-seam", limit=1, lease_seconds=30)
    _unavailable(caught)
    outbox.reset_connection()
    assert outbox.outbox_claim(relay_id="r-seam", limit=1, lease_seconds=30) == []


def test_a_refused_write_is_told_by_its_sqlstate_not_its_row() -> None:
    driver = PostgresDriver(database="default")
    job_id = new_job_id()
    driver.job_enqueue(
        request=EnqueueRequest(id=job_id, name="tests.echo", queue="default", input_json="{}")
    )
    [job] = _claim(driver)
    bad = AckItem(job_id=job.id, claim_token=job.claim_token, result_json='{"kept out": NaN}')
    with pytest.raises(StoreRefused) as caught:
        driver.job_ack_many(items=[bad])
    refused = caught.value
    assert (refused.code, refused.sqlstate) == ("X_STORE_REFUSED", "22P02")
    assert refused.reason == "DataError: invalid input syntax for type json"
    assert "SQLSTATE 22P02" in str(refused)
    # The database's CONTEXT line quotes the value; the seam's error does not.
    assert "kept out" in str(refused.__cause__)
    assert "kept out" not in str(refused)
    assert not isinstance(refused, DatabaseError)
    # Refused, not lost: the connection still serves.
    record = driver.job_get(job_id=uuid.UUID(str(job_id)))
    assert record is not None and record.state == "running"
