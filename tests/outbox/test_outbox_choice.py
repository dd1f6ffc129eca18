"""Which outbox ``get_outbox()`` builds: ``x_outbox`` wherever ``OUTBOX_DATABASE`` is PostgreSQL,
whatever the driver; the memory outbox for the memory driver on another vendor, where staging
now works through the same seam and relay."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction
from django.test import override_settings

from tests.testapp import jobs
from tests.unit.test_checks import SQLITE, extra_database
from ultimat3_jobs.drivers import get_driver, get_outbox
from ultimat3_jobs.drivers.memory.outbox import MemoryOutbox
from ultimat3_jobs.drivers.postgres.outbox import PostgresOutbox
from ultimat3_jobs.runtime.relay import Relay, RelayConfig

BASE = {"DEFAULT_TENANT": "none"}
MEMORY_ON_SQLITE = {**BASE, "DRIVER": "memory", "DATABASE": "lite", "OUTBOX_DATABASE": "lite"}


@pytest.fixture
def memory_on_sqlite(tmp_path: Path) -> Iterator[None]:
    # A file, not ":memory:": Django never closes an in-memory SQLite connection.
    lite = {**SQLITE, "NAME": str(tmp_path / "lite.sqlite3")}
    with extra_database("lite", lite), override_settings(ULTIMAT3_JOBS=MEMORY_ON_SQLITE):
        yield


@pytest.mark.parametrize("driver", ["postgres", "memory"])
def test_an_outbox_database_on_postgresql_keeps_x_outbox_whatever_the_driver(driver: str) -> None:
    with override_settings(ULTIMAT3_JOBS={**BASE, "DRIVER": driver}):
        outbox = get_outbox()
        assert isinstance(outbox, PostgresOutbox)
        assert (outbox.name, outbox.database) == ("postgres", "default")


@pytest.mark.usefixtures("memory_on_sqlite")
def test_the_memory_driver_on_another_vendor_stages_in_memory() -> None:
    outbox = get_outbox()
    assert isinstance(outbox, MemoryOutbox)
    assert (outbox.name, outbox.database) == ("memory", "lite")
    assert get_outbox() is outbox  # built once


def test_the_postgres_driver_keeps_x_outbox_on_another_vendor() -> None:
    # That setup is refused by the system check E051; no memory outbox hides it.
    jobs_setting = {**BASE, "DRIVER": "postgres", "OUTBOX_DATABASE": "lite"}
    with extra_database("lite", SQLITE), override_settings(ULTIMAT3_JOBS=jobs_setting):
        assert isinstance(get_outbox(), PostgresOutbox)


@pytest.mark.usefixtures("memory_on_sqlite")
def test_a_staged_enqueue_on_sqlite_is_published_by_the_relay_after_its_commit(
    django_db_blocker: Any,
) -> None:
    # Only the SQLite alias is used (no test database): its transactions are real ones.
    with django_db_blocker.unblock():
        staged_and_published()


def staged_and_published() -> None:
    with pytest.raises(RuntimeError), transaction.atomic(using="lite"):
        dropped = jobs.noop.using(publish="staged").enqueue()
        raise RuntimeError("roll back")
    with transaction.atomic(using="lite"):
        kept = jobs.echo.using(publish="staged").enqueue(n=3)
        assert kept.staged
        assert get_driver().job_get(job_id=kept.id) is None
    config = RelayConfig(
        relay_id=f"relay-{uuid.uuid4().hex[:6]}", poll_floor=0.01, poll_ceiling=0.1
    )
    relay = Relay(get_outbox(), get_driver(), config)
    thread = threading.Thread(target=relay.run, daemon=True)
    thread.start()
    try:
        assert relay.published.wait(10)
    finally:
        relay.request_stop()
        thread.join(10)
    assert relay.published_count == 1
    record = get_driver().job_get(job_id=kept.id)
    assert record is not None and record.input == {"n": 3}
    assert get_driver().job_get(job_id=dropped.id) is None
