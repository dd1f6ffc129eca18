"""The hot statements, prepared when the alias asks for prepared statements.

The statements a worker and ``enqueue_many`` run all day (:data:`BOUND_STATEMENTS`) are
planned anew on every run by Django's default cursor, which binds client-side
(``ClientCursor``) and never prepares: about 1 ms for ``job_claim`` and 3 ms for a
``job_settle_many`` that mixes endings, on the database's CPU. When the alias asks for prepared
statements, as Django has it (``"OPTIONS": {"prepare_threshold": N}``, any number), they are
sent with server-side binding on the same Django connection (its transaction, its time zone,
its ``execute_wrapper`` hooks and query log) and prepared on their first run. Without it they
run as every other statement does: Django leaves prepared statements off by default because a
connection pooler in transaction mode does not keep them, and so does this driver. (Binding
server-side alone, unprepared, measured no cheaper than Django's client-side binding with
psycopg's C implementation, so it is not used without the preparation.)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from django.db import connections
from django.db.backends.utils import CursorWrapper

BOUND_STATEMENTS = frozenset(
    {
        "job_claim",
        "job_claim_notified",
        "job_ack_many",
        "job_settle_many",
        "job_settle_handoff",
        "job_heartbeat_many",
        "job_enqueue_many",
        "job_enqueue_shared",
        "job_enqueue_minted",
    }
)


class BoundCursor(psycopg.Cursor[Any]):
    """psycopg's server-side binding cursor; ``prepared`` says whether a run without an
    explicit ``prepare`` is prepared (True) or follows the connection's threshold (None)."""

    prepared: bool | None = None

    def execute(
        self,
        query: Any,
        params: Any = None,
        *,
        prepare: bool | None = None,
        binary: bool | None = None,
    ) -> BoundCursor:
        chosen = self.prepared if prepare is None else prepare
        super().execute(query, params, prepare=chosen, binary=binary)
        return self


def prepares(alias: str) -> bool:
    """Whether the alias asked for prepared statements (``OPTIONS["prepare_threshold"]``)."""
    return asks_prepared(connections[alias])


def asks_prepared(connection: Any) -> bool:
    """:func:`prepares` for the alias's connection already in hand."""
    options = connection.settings_dict.get("OPTIONS") or {}
    return options.get("prepare_threshold") is not None


@contextmanager
def bound_cursor(alias: str) -> Iterator[CursorWrapper]:
    """A cursor of the alias's connection that binds server-side, wrapped as Django wraps its
    own (error translation, ``execute_wrapper`` hooks, the debug query log)."""
    connection = connections[alias]
    with connection.cursor() as django_cursor:
        raw = BoundCursor(connection.connection)
        raw.prepared = True if prepares(alias) else None
        wrapper = type(django_cursor)(raw, connection)
        try:
            yield wrapper
        finally:
            raw.close()
