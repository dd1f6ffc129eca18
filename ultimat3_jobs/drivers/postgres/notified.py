"""The claim of the job a wake named, run on the listening connection itself.

The listener's thread claims the row by primary key (``job_claim_notified``) between two waits,
on the connection it listens on (:func:`~ultimat3_jobs.drivers.postgres.listen.thread_session`)
rather than on a Django connection of its own. That connection is a session of its own, proven
by its probe (a transaction-pooling proxy, which would lose a prepared statement, delivers no
notification), so the statement is prepared on its first run there (as :data:`PREPARED_NAME`)
and bound server-side, unless the alias opts out (``"prepare_threshold": None``,
``bound.may_prepare``): then it is planned on every run and never prepared. It autocommits, as
every claim does, and commits without waiting for the flush (``claim_take``); like the
``LISTEN`` on that connection, it runs outside Django's ``execute_wrapper`` hooks and query log.

The statement goes to libpq in one call (``exec_prepared``, or ``exec_params`` unprepared, each
of which releases the GIL while it waits) under psycopg's connection lock, its parameters
written as :func:`~ultimat3_jobs.drivers.postgres.direct.encoded` writes a step's, and its row
loaded by psycopg's loaders: psycopg's cursor machinery (a cursor, its query conversion,
dumpers, generators and column descriptions) cost about as much client CPU again as the rest
of the claim, on the wake's path between the enqueue's commit and the body (measured per claim,
this process's thread CPU: 150-185 us through a cursor, 70-100 us so). A notification the
statement read meanwhile is passed to psycopg as its own statements pass it, for the listener's
next read (``listen.py``).
"""

from __future__ import annotations

import uuid
import weakref
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.adapt import Transformer
from psycopg.errors import InvalidSqlStatementName
from psycopg.pq import PGconn

from ultimat3_jobs.drivers.postgres.direct import answered, encoded, numbered
from ultimat3_jobs.drivers.postgres.queries import STATEMENTS
from ultimat3_jobs.drivers.postgres.rows import jobs as job_rows
from ultimat3_jobs.drivers.postgres.rows.result import Result
from ultimat3_jobs.types import ClaimedJob

STATEMENT = "job_claim_notified"
PREPARED_NAME = b"ultimat3_jobs_claim_notified"
"""The claim's name among the session's prepared statements (psycopg names its own ``_pg3_*``)."""

_SQL, _NAMES = numbered(STATEMENTS[STATEMENT])

_prepared: weakref.WeakKeyDictionary[psycopg.Connection[Any], Transformer]
_prepared = weakref.WeakKeyDictionary()
"""The connections the claim is prepared on, each with the loaders of its row."""
_columns: dict[str, tuple[str, ...]] = {}
"""The claim's column names, read from its first result (the same on every run)."""


def claim_notified(
    conn: psycopg.Connection[Any],
    *,
    job_id: uuid.UUID,
    queues: Sequence[str],
    worker_id: str,
    lease_seconds: float,
    prepare: bool,
) -> ClaimedJob | None:
    """The job ``job_id``, claimed for ``worker_id`` on ``conn`` (autocommit), the statement
    prepared when ``prepare``; ``None`` when the fences of ``job_claim_notified`` leave it.
    Raises ``psycopg.Error``."""
    params = {
        "id": job_id,
        "queues": list(queues),
        "worker_id": worker_id,
        "lease_seconds": float(lease_seconds),
    }
    encoding = conn.info.encoding
    sent = encoded(params, _NAMES, encoding)
    assert sent is not None  # a UUID, a list of str, a str and a float: each one it writes
    values, types, formats = sent
    pgconn = conn.pgconn
    with conn.lock:
        try:
            if prepare:
                loaders = _prepared.get(conn) or _prepare(conn, pgconn, types, encoding)
                result = pgconn.exec_prepared(PREPARED_NAME, values, formats)
            else:
                loaders = Transformer(conn)
                result = pgconn.exec_params(_SQL, values, types, formats)
        finally:
            _keep_notifications(pgconn)
        try:
            answered(result, pgconn, encoding)
        except InvalidSqlStatementName:
            _prepared.pop(conn, None)  # deallocated under it: prepared again at the next claim
            raise
        loaders.set_pgresult(result)
        rows = loaders.load_rows(0, result.ntuples, tuple)
        names = _columns.get(STATEMENT) or _columns.setdefault(
            STATEMENT, tuple((result.fname(i) or b"").decode() for i in range(result.nfields))
        )
    return next(iter(job_rows.claimed_jobs(Result(STATEMENT, names, rows))), None)


def _prepare(
    conn: psycopg.Connection[Any], pgconn: PGconn, types: list[int], encoding: str
) -> Transformer:
    answered(pgconn.prepare(PREPARED_NAME, _SQL, types), pgconn, encoding)
    loaders = _prepared[conn] = Transformer(conn)
    return loaders


def _keep_notifications(pgconn: PGconn) -> None:
    """Notifications libpq read during the statement, handed to psycopg's connection, which
    keeps them for its next ``notifies()`` as it keeps those its own statements read."""
    while (notify := pgconn.notifies()) is not None:
        if pgconn.notify_handler is not None:
            pgconn.notify_handler(notify)
