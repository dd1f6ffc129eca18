"""Which hot statements are prepared, on which connection (``drivers/postgres/bound.py``).

The worker's statements are prepared by default on a connection proven a session of its own,
every bound statement when the alias asks (``OPTIONS["prepare_threshold"]``, a number), and
none when it states ``None``; either way they run through Django's cursor wrapper, so
``execute_wrapper`` hooks see them. A connection a pooler answers (it names a backend of its
own) prepares nothing by default. A reconnect prepares anew; DDL on ``x_jobs`` during a run
does not break a prepared statement."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection

from tests.drivers.support import enqueue
from tests.postgres.conftest import UNSTATED
from tests.postgres.pooler import RenamingProxy, proxied
from tests.postgres.support import terminate_backend
from ultimat3_jobs.drivers.leases_seam import LeaseRequest, LeaseRun
from ultimat3_jobs.drivers.postgres.bound import direct_session
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.drivers.postgres.queries import STATEMENTS
from ultimat3_jobs.errors import DriverUnavailable
from ultimat3_jobs.types import ClaimedJob, SettleItem

pytestmark = pytest.mark.django_db(transaction=True)

HOT = ("job_claim", "job_ack_many", "job_settle_many", "job_heartbeat_many")


@pytest.fixture(autouse=True)
def _fresh_connection() -> Iterator[None]:
    """Each test connects anew (no statement prepared yet), and leaves no dead connection."""
    connection.close()
    yield
    connection.close()


def _prepared(names: tuple[str, ...] = HOT) -> set[str]:
    """Which of ``names`` this thread's session has prepared."""
    with connection.cursor() as cursor:
        cursor.execute("select statement from pg_prepared_statements")
        texts = [row[0] for row in cursor.fetchall()]
    return {name for name in names if any(STATEMENTS[name].split("\n")[0] in t for t in texts)}


def _backend() -> int:
    with connection.cursor() as cursor:
        cursor.execute("select pg_backend_pid()")
        return int(cursor.fetchone()[0])


def _run_hot(driver: PostgresDriver) -> list[ClaimedJob]:
    """Claim two jobs, beat for them, ack one and retry the other (``job_settle_many``)."""
    for _ in range(2):
        enqueue(driver)
    claimed = driver.job_claim(queues=["default"], limit=2, worker_id="w", lease_seconds=60)
    assert len(claimed) == 2
    beat = driver.job_heartbeat_many(
        attempts=[(job.id, job.claim_token) for job in claimed], lease_seconds=60
    )
    assert beat.renewed == {job.id for job in claimed}
    acked, retried = claimed
    ack = [SettleItem(job_id=acked.id, claim_token=acked.claim_token, action="complete")]
    assert driver.job_settle_many(items=ack) == {acked.id}  # job_ack_many
    retry = [SettleItem(job_id=retried.id, claim_token=retried.claim_token, action="retry")]
    assert driver.job_settle_many(items=retry) == {retried.id}
    return claimed


def test_the_hot_statements_are_prepared_as_the_alias_says(threshold: Any) -> None:
    driver = PostgresDriver()
    seen: list[str] = []

    def watch(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(watch):
        _run_hot(driver)
    assert len([sql for sql in seen if sql in {STATEMENTS[name] for name in HOT}]) == 4
    prepared = _prepared()
    # Unstated (Django's default) on this direct connection, or asked for: all four.
    assert prepared == (set(HOT) if threshold in (UNSTATED, 5) else set())
    # The connection's own threshold is left as Django set it (None: nothing else prepares).
    assert connection.connection.prepare_threshold == (5 if threshold == 5 else None)


@pytest.fixture
def pooled() -> Iterator[RenamingProxy]:
    """The default alias, through a proxy that names its backends as a pooler does."""
    host = connection.settings_dict["HOST"] or "127.0.0.1"
    proxy = RenamingProxy(host, int(connection.settings_dict["PORT"] or 5432))
    before = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict.update(proxied(before, proxy))
    try:
        yield proxy
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(before)
        proxy.close()


def test_a_connection_a_pooler_answers_prepares_nothing_by_default(pooled) -> None:
    driver = PostgresDriver()
    connection.ensure_connection()
    assert connection.connection.info.backend_pid != _backend()  # the proxy renamed it
    _run_hot(driver)
    assert direct_session(connection) is False
    assert _prepared() == set()


def test_a_pooled_alias_that_asks_prepares(pooled) -> None:
    """``prepare_threshold`` (a number) is the alias's word that its path keeps sessions."""
    connection.settings_dict["OPTIONS"]["prepare_threshold"] = 5
    _run_hot(PostgresDriver())
    assert _prepared() == set(HOT)


def test_a_reconnect_prepares_anew() -> None:
    """A killed backend: the next statement fails, the driver's connection is reset (as the
    worker does after a database error), and the new session proves itself and prepares its
    own."""
    driver = PostgresDriver()
    _run_hot(driver)
    first = _backend()
    assert _prepared() == set(HOT)
    terminate_backend(first)
    with pytest.raises(DriverUnavailable):
        driver.job_claim(queues=["default"], limit=1, worker_id="w", lease_seconds=60)
    driver.reset_connection()
    _run_hot(driver)
    assert _backend() != first
    assert _prepared() == set(HOT)


def test_ddl_on_the_table_during_a_run_leaves_the_prepared_statements_working() -> None:
    """They name their columns (no ``*``): a column added or dropped meanwhile is planned
    anew by PostgreSQL, not refused as a changed result type."""
    driver = PostgresDriver()
    _run_hot(driver)
    column = f"ddl_{uuid.uuid4().hex[:8]}"
    with connection.cursor() as cursor:
        cursor.execute(f"alter table x_jobs add column {column} int")
    try:
        _run_hot(driver)
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"alter table x_jobs drop column {column}")
    _run_hot(driver)
    assert _prepared() == set(HOT)


def test_the_lease_grant_of_a_claims_runs_is_prepared_as_the_alias_says(threshold: Any) -> None:
    """``lease_acquire_many`` runs once per claim of jobs under a declared concurrency and
    plans in about 0.4 ms (``job_ack_many``: 0.16 ms): a worker statement, prepared with
    them."""
    driver = PostgresDriver()
    for _ in range(2):
        enqueue(driver)
    claimed = driver.job_claim(queues=["default"], limit=2, worker_id="w", lease_seconds=60)
    key = f"job:prepared-{uuid.uuid4().hex[:8]}"
    runs = [LeaseRun(job.id, job.claim_token, [LeaseRequest(key=key, limit=2)]) for job in claimed]
    grants = driver.lease_acquire_many(runs=runs)
    assert [grant.granted for grant in grants] == [True, True]
    names = ("lease_acquire_many",)
    assert _prepared(names) == (set(names) if threshold in (UNSTATED, 5) else set())


def test_the_claims_and_acks_rows_are_read_in_binary_where_prepared(threshold: Any) -> None:
    """Read in text, each claimed row parsed a float's text (its ``run_at``, ``strtod``), three
    integers' and two UUIDs' digits: about 3,500 instructions a job of the worker's 180,000
    (callgrind). Prepared, they come in binary and load as the same Python values; Django's
    cursor (nothing prepared) reads text, as it always did."""
    driver = PostgresDriver()
    formats: dict[str, set[int]] = {}
    names = {STATEMENTS[name]: name for name in ("job_claim", "job_ack_many")}

    def watch(execute, sql, params, many, context):
        answer = execute(sql, params, many, context)
        result = context["cursor"].cursor.pgresult
        if sql in names and result is not None:
            formats[names[sql]] = {result.fformat(i) for i in range(result.nfields)}
        return answer

    with connection.execute_wrapper(watch):
        claimed = _run_hot(driver)
    prepared = threshold in (UNSTATED, 5)
    assert formats == {"job_claim": {int(prepared)}, "job_ack_many": {int(prepared)}}
    for job in claimed:
        assert type(job.id) is uuid.UUID and type(job.claim_token) is uuid.UUID
        assert type(job.attempt) is int and job.attempt == 1
        assert type(job.max_attempts) is int and type(job.priority) is int
        assert (job.name, job.queue, type(job.input)) == ("tests.echo", "default", dict)
