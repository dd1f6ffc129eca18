"""The benchmark's own connections to the server: statements on the bench database, and
readings of its sessions and transaction counts from another database (which adds nothing to
the bench database's counts)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from bench.support import BenchError


class BenchDatabase:
    """Mixed into :class:`bench.core.Bench`, which sets the attributes below."""

    database: dict[str, Any]
    dbname: str
    admin_dbname: str
    _conn: psycopg.Connection[Any] | None
    _admin: psycopg.Connection[Any] | None

    def conninfo(self, dbname: str, *, password: bool = True) -> str:
        db = self.database
        params = {
            "host": db.get("HOST") or None,
            "port": db.get("PORT") or None,
            "user": db.get("USER") or None,
            "password": (db.get("PASSWORD") or None) if password else None,
            "dbname": dbname,
            **db.get("OPTIONS", {}),
        }
        return make_conninfo(**{key: value for key, value in params.items() if value is not None})

    def admin(self) -> psycopg.Connection[Any]:
        """A connection to another database of the server: reading statistics there adds no
        transaction to the bench database's."""
        if self._admin is None or self._admin.closed:
            self._admin = psycopg.connect(
                self.conninfo(self.admin_dbname), autocommit=True, application_name="bench-admin"
            )
        return self._admin

    def sql(self, query: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        """Run one statement on the bench database (autocommit) and answer its rows."""
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(
                self.conninfo(self.dbname), autocommit=True, application_name="bench-probe"
            )
        with self._conn.cursor() as cursor:
            cursor.execute(query, params)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description else []

    def disconnect_bench_database(self) -> None:
        """Close every connection this process holds to the bench database, and wait until
        their backends are gone: a backend publishes its transaction counts as it exits, and
        they must not land in a window that counts the workers'."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        from django.db import connections

        connections.close_all()
        deadline = time.monotonic() + 10
        while others := self.sessions():
            if time.monotonic() > deadline:
                raise BenchError(f"sessions still connected to {self.dbname}: {others}")
            time.sleep(0.05)
        time.sleep(0.2)

    def sessions(self, dbname: str | None = None) -> str:
        """Who is connected to the bench database, by application name or backend type."""
        rows = (
            self.admin()
            .execute(
                "select coalesce(nullif(application_name, ''), backend_type), count(*) "
                "from pg_stat_activity where datname = %s group by 1 order by 1",
                (dbname or self.dbname,),
            )
            .fetchall()
        )
        return ", ".join(f"{count} x {name}" for name, count in rows)

    def xacts(self, dbname: str | None = None) -> int:
        """Committed plus rolled-back transactions of the bench database, read from another
        database so the reading is not counted."""
        row = (
            self.admin()
            .execute(
                "select xact_commit + xact_rollback from pg_stat_database where datname = %s",
                (dbname or self.dbname,),
            )
            .fetchone()
        )
        assert row is not None
        return int(row[0])

    def autovacuum_runs(self) -> int:
        """Autovacuum and autoanalyze runs on the bench database's tables so far."""
        rows = self.sql(
            "select coalesce(sum(autovacuum_count + autoanalyze_count), 0) from pg_stat_user_tables"
        )
        return int(rows[0][0])

    def count_jobs(self) -> dict[str, int]:
        return {
            state: int(n) for state, n in self.sql("select state, count(*) from x_jobs group by 1")
        }

    def work_left(self) -> bool:
        rows = self.sql(  # counting every row's state cost 6-13 ms a poll in a loaded drain
            "select exists (select 1 from x_jobs where state = 'queued' and not paused) "
            "or exists (select 1 from x_jobs where state = 'running')"
        )
        return bool(rows[0][0])
