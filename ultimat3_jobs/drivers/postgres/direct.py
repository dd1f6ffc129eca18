"""A step's write, run on the psycopg connection under Django's, without Django's cursor wrapper.

A durable step costs one statement (``step_put``, ``step_start_once`` before a once step,
``backfill_step_put`` for a backfill's batch), run on the body's own thread while its job runs:
Django's cursor wrapper, its per-cursor checks and its connection lookups are a large part of a
step's CPU in the worker. So these statements run on the same Django connection's psycopg
connection directly, with what the wrapper would have done kept:

* the same connection, so the same transaction state (a step write runs in autocommit, never
  inside the body's ``atomic()`` block: ``runtime/steps/writer.py``), time zone and session;
* a database error is turned into Django's error as Django's wrapper turns it (and the
  connection is marked as having seen an error, so Django discards a broken one), and then
  into the seam's (``DriverUnavailable``, ``StoreRefused``) by the driver's method;
* server-side binding, which costs the worker less CPU than psycopg's client-side binding
  (Django's default) and is safe behind a transaction-pooling proxy; prepared only when the
  alias asks for prepared statements (``OPTIONS["prepare_threshold"]``, as in :mod:`.bound`).

Django's own cursor is used instead whenever the wrapper would add something: the query log is
on (``DEBUG``, a test counting queries), an ``execute_wrapper`` hook is installed, the
connection is not open yet or its health check is due, or an atomic block needs a rollback.
"""

from __future__ import annotations

from typing import Any

import psycopg
from django.db import connections

from ultimat3_jobs.drivers.postgres.bound import prepares
from ultimat3_jobs.drivers.postgres.queries import STATEMENTS
from ultimat3_jobs.models import RawStatementManager

DIRECT_STATEMENTS = frozenset({"step_put", "step_put_done", "step_start_once", "backfill_step_put"})
"""The statements that may run on the psycopg connection directly: each answers plain values
(no timestamps, so no time-zone loader is needed) and runs once per executed step."""

_SQL = {name: STATEMENTS[name].encode() for name in DIRECT_STATEMENTS}
"""Their text as bytes, encoded (and hashed, for psycopg's cache of parsed queries) once."""


def _plain(connection: Any) -> bool:
    """Whether Django's cursor wrapper would add nothing to a statement on ``connection``."""
    return not (
        connection.connection is None
        or connection.queries_logged
        or connection.execute_wrappers
        or connection.needs_rollback
        or (connection.health_check_enabled and not connection.health_check_done)
    )


def run_direct(
    manager: RawStatementManager, statement: str, params: dict[str, Any]
) -> list[tuple[Any, ...]]:
    """Run ``statement`` (one of :data:`DIRECT_STATEMENTS`) on ``manager``'s alias and answer
    its rows, on the psycopg connection when nothing of Django's wrapper is needed, else as
    :meth:`RawStatementManager.run` does."""
    sql = _SQL.get(statement)
    if sql is None:
        raise ValueError(f"{statement!r} is not a statement that runs directly")
    connection = connections[manager.db]
    if not _plain(connection):
        return manager.run(statement, params)
    raw = connection.connection
    cursor = psycopg.Cursor(raw)
    try:
        cursor.execute(sql, params, prepare=prepares(manager.db))
        return cursor.fetchall() if cursor.description is not None else []
    except psycopg.Error:
        with connection.wrap_database_errors:
            raise
    finally:
        cursor.close()
