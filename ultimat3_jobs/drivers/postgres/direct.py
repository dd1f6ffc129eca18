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

Unprepared, the statement goes to libpq in one call (``PGconn.exec_params``, which releases the
GIL while it waits) under psycopg's connection lock, its few parameter types (UUID, int, str,
``None``) written with their type, a UUID as its 16 bytes (the uuid type's binary form) and the
rest as text: psycopg's cursor machinery (a cursor, an adapters map, its generators, its row
loaders) cost about as much CPU again as the round trip, and these statements answer only
whether a row came back. A failed statement is raised as psycopg would
raise it; a parameter of another type takes psycopg's cursor instead. The wake's claim
(``notified.py``) sends its parameters through the same writer (:func:`encoded`, which also
writes a float and a list of str) and checks its result by the same rule (:func:`answered`).

Django's own cursor is used instead whenever the wrapper would add something: the query log is
on (``DEBUG``, a test counting queries), an ``execute_wrapper`` hook is installed, the
connection is not open yet or its health check is due, or an atomic block needs a rollback.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import psycopg
from django.db import connections
from psycopg.errors import error_from_result
from psycopg.pq import ConnStatus, DiagnosticField, ExecStatus, PGconn, PGresult

from ultimat3_jobs.drivers.postgres.bound import asks_prepared
from ultimat3_jobs.drivers.postgres.queries import STATEMENTS
from ultimat3_jobs.models import RawStatementManager

DIRECT_STATEMENTS = frozenset({"step_put", "step_put_done", "step_start_once", "backfill_step_put"})
"""The statements that may run on the psycopg connection directly: each answers plain values
(no timestamps, so no time-zone loader is needed) and runs once per executed step."""

_SQL = {name: STATEMENTS[name].encode() for name in DIRECT_STATEMENTS}
"""Their text as bytes, encoded (and hashed, for psycopg's cache of parsed queries) once."""

DIAG_MESSAGE = DiagnosticField.MESSAGE_PRIMARY

_ANSWERED = frozenset({int(ExecStatus.TUPLES_OK), int(ExecStatus.COMMAND_OK)})
"""The result statuses of a statement that ran (as plain ints: compared once per step)."""

_PLACEHOLDER = re.compile(r"%\((\w+)\)s")

UUID_OID, INT8_OID, FLOAT8_OID, TEXT_ARRAY_OID, UNKNOWN_OID = 2950, 20, 701, 1009, 0
"""The types a parameter is sent with, by its Python type: ``uuid``, ``int8``, ``float8``,
``text[]`` for a list of str, and unknown for text and NULL (the server types them from the
statement, as for psycopg's own str)."""

TEXT, BINARY = 0, 1
"""A parameter's format: a uuid goes as its 16 bytes, the rest as text."""


def numbered(sql: str) -> tuple[bytes, tuple[str, ...]]:
    """``sql`` with its ``%(name)s`` placeholders as ``$1, $2...`` (one number per name), and
    the names in that order."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    return _PLACEHOLDER.sub(number, sql).encode(), tuple(names)


_NUMBERED = {name: numbered(STATEMENTS[name]) for name in DIRECT_STATEMENTS}


def _plain(connection: Any) -> bool:
    """Whether Django's cursor wrapper would add nothing to a statement on ``connection``."""
    return not (
        connection.connection is None
        or connection.queries_logged
        or connection.execute_wrappers
        or connection.needs_rollback
        or (connection.health_check_enabled and not connection.health_check_done)
    )


def run_direct(manager: RawStatementManager, statement: str, params: dict[str, Any]) -> int:
    """Run ``statement`` (one of :data:`DIRECT_STATEMENTS`) on ``manager``'s alias and answer
    how many rows it returned, on the psycopg connection when nothing of Django's wrapper is
    needed, else as :meth:`RawStatementManager.run` does."""
    if statement not in _SQL:
        raise ValueError(f"{statement!r} is not a statement that runs directly")
    connection = connections[manager.db]
    if not _plain(connection):
        return len(manager.run(statement, params))
    raw = connection.connection
    try:
        if asks_prepared(connection):
            return _through_cursor(raw, _SQL[statement], params, prepare=True)
        return _through_libpq(raw, statement, params)
    except psycopg.Error:
        with connection.wrap_database_errors:
            raise


def _through_cursor(
    raw: psycopg.Connection[Any], sql: bytes, params: dict[str, Any], *, prepare: bool
) -> int:
    with psycopg.Cursor(raw) as cursor:
        cursor.execute(sql, params, prepare=prepare)
        return len(cursor.fetchall()) if cursor.description is not None else 0


def _through_libpq(raw: psycopg.Connection[Any], statement: str, params: dict[str, Any]) -> int:
    sql, names = _NUMBERED[statement]
    pgconn = raw.pgconn
    encoding = raw.info.encoding
    sent = encoded(params, names, encoding)
    if sent is None or pgconn.pipeline_status:
        return _through_cursor(raw, _SQL[statement], params, prepare=False)
    values, types, formats = sent
    with raw.lock:
        result = pgconn.exec_params(sql, values, types, formats)
    return answered(result, pgconn, encoding).ntuples


def encoded(
    params: dict[str, Any], names: tuple[str, ...], encoding: str
) -> tuple[list[bytes | None], list[int], list[int]] | None:
    """The values of ``params`` named ``names``, in that order, as libpq sends them, with
    their types and formats; ``None`` when one has a type this module does not write (the
    caller takes psycopg's cursor then)."""
    values: list[bytes | None] = []
    types: list[int] = []
    formats: list[int] = []
    for name in names:
        value = params[name]
        kind = type(value)
        if kind is str:
            values.append(value.encode(encoding))
            types.append(UNKNOWN_OID)
            formats.append(TEXT)
        elif kind is uuid.UUID:
            values.append(value.bytes)  # the uuid type's binary form: its 16 bytes
            types.append(UUID_OID)
            formats.append(BINARY)
        elif kind is int:
            values.append(b"%d" % value)
            types.append(INT8_OID)
            formats.append(TEXT)
        elif kind is float:
            values.append(repr(value).encode())  # round-trips, as float8's input reads it
            types.append(FLOAT8_OID)
            formats.append(TEXT)
        elif kind is list and all(type(item) is str for item in value):
            values.append(_text_array(value).encode(encoding))
            types.append(TEXT_ARRAY_OID)
            formats.append(TEXT)
        elif value is None:
            values.append(None)
            types.append(UNKNOWN_OID)
            formats.append(TEXT)
        else:
            return None
    return values, types, formats


def _text_array(items: list[str]) -> str:
    """A text[] literal: every element quoted, its quotes and backslashes escaped."""
    quoted = (item.replace("\\", "\\\\").replace('"', '\\"') for item in items)
    return "{" + ",".join(f'"{item}"' for item in quoted) + "}"


def answered(result: PGresult, pgconn: PGconn, encoding: str) -> PGresult:
    """``result`` of a statement that ran; raises as psycopg would raise a failed one (an
    ``OperationalError`` when the connection is lost, not the statement)."""
    if result.status not in _ANSWERED:
        if pgconn.status != ConnStatus.OK:
            message = result.error_field(DIAG_MESSAGE) or result.error_message
            raise psycopg.OperationalError(message.decode(encoding, "replace").strip())
        raise error_from_result(result, encoding=encoding)
    return result
