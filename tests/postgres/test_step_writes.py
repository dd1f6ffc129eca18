"""A step's writes (``step_put``, ``step_start_once``) run on the psycopg connection under
Django's, without Django's cursor wrapper, when the wrapper would add nothing: prepared only
when the alias asks, seen by ``execute_wrapper`` hooks and the query log when those are on, and
speaking the seam's errors as every other statement of the driver does.

A killed backend would break a test transaction, so these tests run outside one."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import psycopg
import pytest
from django.db import DatabaseError, OperationalError, connection, connections
from django.test.utils import CaptureQueriesContext

from tests.drivers.steps_support import done
from tests.drivers.support import claim_one, enqueue
from tests.postgres.support import terminate_backend
from ultimat3_jobs.drivers.postgres.direct import run_direct
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.errors import DriverUnavailable, StoreRefused
from ultimat3_jobs.types import ClaimedJob

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fresh_connection() -> Iterator[None]:
    """Each test connects anew, and leaves no dead connection to the next."""
    connection.close()
    yield
    connection.close()


@pytest.fixture
def driver() -> PostgresDriver:
    return PostgresDriver(database="default")


def _attempt(driver: PostgresDriver) -> ClaimedJob:
    enqueue(driver)
    return claim_one(driver)


def _stored(driver: PostgresDriver, job_id: uuid.UUID) -> dict[str, tuple[str, Any]]:
    return {s.name: (s.status, s.output) for s in driver.step_get_many(job_id=job_id)}


def _prepared() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("select statement from pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


def test_step_writes_skip_djangos_cursor_and_are_prepared_only_when_asked(
    driver, threshold, monkeypatch
) -> None:
    job = _attempt(driver)  # the connection is open: a step write needs nothing of Django's
    # No hook of another test's left on this thread's connection (each test's own is tested below).
    monkeypatch.setattr(connections["default"], "execute_wrappers", [])
    django_cursors: list[object] = []
    real_cursor = connection.cursor
    monkeypatch.setattr(
        connections["default"], "cursor", lambda: django_cursors.append(1) or real_cursor()
    )
    assert driver.step_start_once(job_id=job.id, claim_token=job.claim_token, name="a", seq=1)
    assert done(driver, job, "a", 1, '{"n":1}')
    assert done(driver, job, "b", 2, "null")
    assert done(driver, job, "b", 2, "null") is False  # done stays done: nothing answered
    assert driver.step_start_once(job_id=job.id, claim_token=job.claim_token, name="b", seq=2) is (
        False
    )
    state = {
        "connected": connection.connection is not None,
        "queries_logged": connection.queries_logged,
        "execute_wrappers": list(connection.execute_wrappers),
        "needs_rollback": connection.needs_rollback,
        "health_check": (connection.health_check_enabled, connection.health_check_done),
    }
    assert django_cursors == [], state
    monkeypatch.undo()
    assert _stored(driver, job.id) == {"a": ("done", {"n": 1}), "b": ("done", None)}
    prepared = _prepared()
    put = any("step_put for a step done" in text for text in prepared)  # step_put_done
    once = any("'once', 'started'" in text for text in prepared)
    asked = isinstance(threshold, int)  # steps are prepared only when the alias asks
    assert (put, once) == ((True, True) if asked else (False, False))


def test_a_fenced_step_write_lands_nothing_for_a_lost_attempt(driver) -> None:
    job = _attempt(driver)
    stale = uuid.uuid4()
    assert driver.step_put(
        job_id=job.id, claim_token=stale, name="a", seq=1, kind="run", status="done"
    ) is (False)
    assert driver.step_start_once(job_id=job.id, claim_token=stale, name="b", seq=2) is False
    assert _stored(driver, job.id) == {}


def _watching(seen: list[str]):
    """An ``execute_wrapper`` hook that records each statement's text in ``seen``."""

    def watch(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    return watch


def test_hooks_and_the_query_log_still_see_step_writes(driver) -> None:
    job = _attempt(driver)
    seen: list[str] = []
    with connection.execute_wrapper(_watching(seen)):
        assert done(driver, job, "hooked", 1, "1")
    assert len(seen) == 1 and "step_put for a step done" in seen[0]  # step_put_done
    with CaptureQueriesContext(connection) as logged:
        assert driver.step_start_once(
            job_id=job.id, claim_token=job.claim_token, name="logged", seq=2
        )
    assert len(logged.captured_queries) == 1
    assert "'once', 'started'" in logged.captured_queries[0]["sql"]


def test_a_step_done_takes_the_lean_statement_and_a_compensation_the_full_one(driver) -> None:
    """``step_put_done`` (one fenced INSERT) for ``done``; ``step_put`` for ``compensated``,
    which only it covers: each seen by a hook on the connection."""
    job = _attempt(driver)
    seen: list[str] = []
    with connection.execute_wrapper(_watching(seen)):
        assert done(driver, job, "a", 1, "1")
        assert driver.step_put(
            job_id=job.id,
            claim_token=job.claim_token,
            name="a",
            seq=1,
            kind="run",
            status="compensated",
        )
    assert ["compensated as (" in sql for sql in seen] == [False, True]
    assert "-- name: step_put_done" not in seen[0] and "step_put for a step done" in seen[0]
    assert _stored(driver, job.id) == {"a": ("compensated", 1)}


def test_only_the_step_writes_run_directly(driver) -> None:
    with pytest.raises(ValueError, match="job_claim"):
        run_direct(driver._jobs, "job_claim", {})


def test_a_killed_backend_under_a_step_write_raises_driver_unavailable(driver) -> None:
    job = _attempt(driver)
    terminate_backend(connection.connection.info.backend_pid)
    with pytest.raises(DriverUnavailable) as caught:
        done(driver, job, "a", 1, "null")
    lost = caught.value
    assert lost.code == "X_DRIVER_UNAVAILABLE"
    assert not isinstance(lost, (DatabaseError, psycopg.Error))
    assert isinstance(lost.__cause__, OperationalError)  # Django's error, as its wrapper raises
    assert connection.errors_occurred  # so Django discards the connection, as after its own
    driver.reset_connection()
    assert done(driver, job, "a", 1, "null")


def test_a_refused_step_write_is_store_refused_and_the_connection_serves_on(driver) -> None:
    job = _attempt(driver)
    with pytest.raises(StoreRefused) as caught:
        done(driver, job, "bad", 1, '{"kept out": NaN}')
    refused = caught.value
    assert (refused.code, refused.sqlstate) == ("X_STORE_REFUSED", "22P02")
    assert "kept out" not in str(refused)
    assert not connection.errors_occurred
    assert done(driver, job, "good", 2, "[1]")
    assert _stored(driver, job.id) == {"good": ("done", [1])}


def test_a_step_write_waiting_on_a_lock_lets_the_other_threads_run(driver) -> None:
    """The statement waits in libpq with the GIL released: while a step write waits on a row
    another transaction holds, this thread still runs (it watches the writer wait, then lets it
    go). With the GIL held this thread could not run; the writer would give up at its
    ``lock_timeout`` and the test would fail."""
    job = _attempt(driver)
    settings = connection.settings_dict
    holder = psycopg.connect(
        host=settings["HOST"] or None,
        port=settings["PORT"] or None,
        dbname=settings["NAME"],
        user=settings["USER"],
        password=settings["PASSWORD"] or None,
    )
    answer: list[object] = []

    def write() -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("set lock_timeout = '10s'")
            answer.append(done(driver, job, "held", 1, "7"))
        except Exception as exc:  # the test's assertion reports it
            answer.append(exc)
        finally:
            connection.close()

    try:
        holder.execute(
            "insert into x_job_steps (job_id, name, seq, kind, status, created_at, updated_at)"
            " values (%s, 'held', 1, 'run', 'started', now(), now())",
            (job.id,),
        )
        writer = threading.Thread(target=write)
        writer.start()
        deadline = time.monotonic() + 8
        waiting = 0
        with psycopg.connect(holder.info.dsn, autocommit=True) as watcher:
            while not waiting and time.monotonic() < deadline:
                time.sleep(0.02)
                (waiting,) = watcher.execute(
                    "select count(*) from pg_stat_activity where wait_event_type = 'Lock'"
                    " and query like '%%step_put for a step done%%'"
                ).fetchone() or (0,)
        assert writer.is_alive() and answer == []
        holder.commit()
    finally:
        holder.close()
    writer.join(15)
    assert waiting == 1
    assert answer == [True]
    assert _stored(driver, job.id) == {"held": ("done", 7)}


def test_a_parameter_of_another_type_takes_psycopgs_cursor(driver) -> None:
    job = _attempt(driver)
    params = {
        "id": job.id,
        "claim_token": job.claim_token,
        "name": "decimal seq",
        "seq": Decimal(3),  # no text form of our own: psycopg's cursor dumps it
        "kind": "run",
        "output": "[3]",
        "error": None,
    }
    assert run_direct(driver._jobs, "step_put_done", params) == 1
    assert run_direct(driver._jobs, "step_put_done", params) == 0  # done stays done
    (record,) = driver.step_get_many(job_id=job.id)
    assert (record.name, record.seq, record.output) == ("decimal seq", 3, [3])
