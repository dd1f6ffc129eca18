"""The hot statements, prepared on a connection that keeps them.

The statements a worker and ``enqueue_many`` run all day (:data:`BOUND_STATEMENTS`) are
planned anew on every run by Django's default cursor, which binds client-side
(``ClientCursor``) and never prepares: about 1 ms for ``job_claim`` and 3 ms for a
``job_settle_many`` that mixes endings, on the database's CPU. Prepared, they are sent with
server-side binding on the same Django connection (its transaction, its time zone, its
``execute_wrapper`` hooks and query log) and prepared on their first run on that connection.

A prepared statement lives in one server session; a proxy in transaction-pooling mode hands
the next transaction to another one, where it is missing. Django leaves preparation off by
default for that reason. Whether a connection prepares is the alias's ``OPTIONS`` (one rule,
:func:`preparation`):

* ``"prepare_threshold": N`` (any number): every bound statement is prepared; the alias says
  its path keeps sessions.
* ``"prepare_threshold": None``, stated: nothing is (the opt-out, for any proxy).
* not stated (Django's default): the worker's own statements (:data:`WORKER_STATEMENTS`) are
  prepared on a connection proven to be a session of its own (:func:`direct_session`), the
  others are not; ``enqueue_many``'s run in web processes, on short-lived connections, where a
  preparation would cost a round trip more than it saves.

The proof, once per psycopg connection (a reconnect proves anew, and psycopg's cache of
prepared statements is per connection too): the backend pid the server named when the
connection opened (``BackendKeyData``) is the pid of the backend that answers a statement
(``pg_backend_pid()``). A pooler answers the connection itself and names a key of its own (its
cancel requests must reach whichever backend serves the client then), so behind PgBouncer,
PgCat, Odyssey or Supavisor, in any pool mode, nothing is prepared by default. The proof runs
on the psycopg connection, outside Django's ``execute_wrapper`` hooks and query log.

A prepared statement keeps the plan cache's generic plan once its first five runs cost no less
planned for their values (``job_claim`` does: see jobs.sql), and that plan's shape is chosen for
the table as it was then: made while ``x_jobs`` was empty (a worker polling a new or truncated
table), it scans the whole table per claim once a backlog lands (123 ms a claim of 90 at
100,000 rows, 3.5 ms replanned). Only an invalidation replans it (an ``ANALYZE`` or ``VACUUM``
of the table: autovacuum, when it runs), so a connection discards its cached plans every
:data:`REPLAN_SECONDS` once it ran :data:`REPLAN_STATEMENTS` prepared statements (``DISCARD
PLANS``, before a bound statement; the prepared statements stay and are planned again on their
next run).

(Binding server-side alone, unprepared, measured no cheaper than Django's client-side binding
with psycopg's C implementation, so an unprepared bound statement takes Django's cursor.)
"""

from __future__ import annotations

import logging
import sys
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from django.db import connections
from django.db.backends.utils import CursorWrapper

logger = logging.getLogger("ultimat3_jobs.driver")

WORKER_STATEMENTS = frozenset(
    {
        "job_claim",
        "job_ack_many",
        "job_settle_many",
        "job_settle_handoff",
        "job_settle_many_handoff",
        "job_heartbeat_many",
        "job_claim_notified",
        "lease_acquire_many",
    }
)
"""The statements a worker runs per claim, per flush of endings and per beat, the claim of a
wake (on the listening session, which its probe proves), and the lease grant of the runs a
claim starts under a declared concurrency (``lease_acquire_many``: prepared, a grant of 32 runs
cost the backend 1.3-1.6 ms of CPU instead of 1.9-2.9 ms): prepared by default on a direct
session."""

BOUND_STATEMENTS = WORKER_STATEMENTS | {
    "job_enqueue_many",
    "job_enqueue_shared",
    "job_enqueue_minted",
}
"""Every statement prepared when the alias asks for prepared statements."""

BINARY_RESULTS = frozenset({"job_claim", "job_ack_many"})
"""The statements run once per claim or flush of acks whose rows a prepared cursor reads in
binary: their columns are uuid, text, integers and float8 only (never a jsonb or a timestamp,
whose Python values Django's text loaders decide), which load as the same Python values
either way, without parsing per row a float's text (``strtod``, about 2,300 instructions per
claimed job; callgrind), three integers' and two UUIDs' digits."""

COUNTED_NEVER = sys.maxsize
"""The threshold a connection with preparation off (``None``) runs a bound statement with:
psycopg prepares only what a cursor asks it to, and never a statement by its count."""

PROOF = b"select pg_backend_pid()"

REPLAN_SECONDS = 10.0
"""How long a connection runs its prepared statements on the plans cached for them before it
discards them (see the module's docstring), once it also ran :data:`REPLAN_STATEMENTS` of them:
a busy connection's statements are planned again about once per period."""

REPLAN_STATEMENTS = 20
"""How many prepared statements a connection runs on its cached plans, at least, before it
discards them: ``DISCARD PLANS`` is a transaction of its own, and an idle worker, which runs a
prepared statement every 10 to 60 seconds, would otherwise send one before each (statements per
minute of an idle worker: 10 to 16). A plan made while ``x_jobs`` was empty is kept for 20
statements at most after a backlog lands (or until an ``ANALYZE`` replans it)."""

_proven: weakref.WeakKeyDictionary[psycopg.Connection[Any], bool] = weakref.WeakKeyDictionary()
_refused_aliases: set[str] = set()


class _Plans:
    """Of a connection: when its plans were last discarded (or it first ran a prepared
    statement), and how many prepared statements it has run since."""

    __slots__ = ("runs", "since")

    def __init__(self, since: float) -> None:
        self.since = since
        self.runs = 0


_plans_of: weakref.WeakKeyDictionary[psycopg.Connection[Any], _Plans] = weakref.WeakKeyDictionary()


class BoundCursor(psycopg.Cursor[Any]):
    """psycopg's server-side binding cursor whose every run is prepared, on its first run
    on the connection, whatever the connection's ``prepare_threshold`` (Django's ``None`` is
    lifted for the run alone)."""

    def execute(
        self,
        query: Any,
        params: Any = None,
        *,
        prepare: bool | None = None,
        binary: bool | None = None,
    ) -> BoundCursor:
        conn = self.connection
        threshold = conn.prepare_threshold
        if threshold is None:
            conn.prepare_threshold = COUNTED_NEVER
        try:
            super().execute(query, params, prepare=prepare is not False, binary=binary)
        finally:
            if threshold is None:
                conn.prepare_threshold = None
        return self


def preparation(connection: Any) -> bool | None:
    """The alias's stated choice: True (a ``prepare_threshold``), False (``None`` stated), or
    ``None`` when it states none (Django's default)."""
    options = connection.settings_dict.get("OPTIONS") or {}
    if "prepare_threshold" not in options:
        return None
    return options["prepare_threshold"] is not None


def asks_prepared(connection: Any) -> bool:
    """Whether the alias asked for prepared statements (a ``prepare_threshold`` number)."""
    return preparation(connection) is True


def may_prepare(connection: Any, statement: str) -> bool:
    """Whether ``statement`` is prepared on ``connection`` if it proves a direct session (or
    at once, when the alias asks)."""
    if statement not in BOUND_STATEMENTS:
        return False
    stated = preparation(connection)
    return stated if stated is not None else statement in WORKER_STATEMENTS


def direct_session(connection: Any) -> bool:
    """Whether the open Django ``connection`` is a session of its own with the backend that
    answers it (proven once per psycopg connection; see the module's docstring)."""
    raw = connection.connection
    proven = _proven.get(raw)
    if proven is None:
        with connection.wrap_database_errors, psycopg.Cursor(raw) as cursor:
            cursor.execute(PROOF, prepare=False)
            (answering,) = cursor.fetchone() or (None,)
        proven = _proven[raw] = answering == raw.info.backend_pid
        if not proven:
            _refused(connection.alias, raw.info.backend_pid, answering)
    return proven


def _discard_old_plans(connection: Any) -> None:
    """``DISCARD PLANS`` on the open Django ``connection`` when its cached plans are
    :data:`REPLAN_SECONDS` old and served :data:`REPLAN_STATEMENTS`, outside a pipeline (on the
    psycopg connection, as the proof)."""
    raw = connection.connection
    now = time.monotonic()
    plans = _plans_of.get(raw)
    if plans is None:
        plans = _plans_of[raw] = _Plans(now)
    plans.runs += 1
    if plans.runs <= REPLAN_STATEMENTS or now - plans.since < REPLAN_SECONDS:
        return
    if raw.info.pipeline_status != psycopg.pq.PipelineStatus.OFF:
        return
    with connection.wrap_database_errors, psycopg.Cursor(raw) as cursor:
        cursor.execute(b"discard plans", prepare=False)
    plans.since, plans.runs = now, 1


def _refused(alias: str, named: int, answering: Any) -> None:
    if alias in _refused_aliases:
        return
    _refused_aliases.add(alias)
    logger.info(
        "jobs.prepared.unproven: a connection of %r was named backend %s, but backend %s "
        "answers it (a connection pooler?); the worker's statements are planned on every run "
        "(OPTIONS prepare_threshold, a number, prepares them if the pooler keeps them)",
        alias,
        named,
        answering,
        extra={"event": "jobs.prepared.unproven", "database": alias},
    )


@contextmanager
def bound_cursor(alias: str, *, binary: bool = False) -> Iterator[CursorWrapper]:
    """A cursor of the alias's connection that prepares, wrapped as Django wraps its own
    (error translation, ``execute_wrapper`` hooks, the debug query log), reading rows in
    binary with ``binary``; Django's own cursor (rows in text) when the alias states no choice
    and the connection (as it stands once Django's cursor opened it) is not proven a direct
    session."""
    connection = connections[alias]
    with connection.cursor() as django_cursor:
        if preparation(connection) is None and not direct_session(connection):
            yield django_cursor
            return
        _discard_old_plans(connection)
        raw = BoundCursor(connection.connection)
        if binary:
            raw.format = psycopg.pq.Format.BINARY
        wrapper = type(django_cursor)(raw, connection)
        try:
            yield wrapper
        finally:
            raw.close()
