"""The PostgreSQL server of the side-by-side run: URLs of its databases, and an admin session
(in another database, so reading the statistics adds nothing to the counted ones)."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

import psycopg
from psycopg import sql

from example_project.dburl import database_from_url
from tests.settings import DEFAULT_DATABASE_URL


class Server:
    """URLs to the databases of the server ``DATABASE_URL`` names, and an admin session."""

    def __init__(self) -> None:
        self.db = database_from_url(os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL)
        self._admin: psycopg.Connection[Any] | None = None

    def url(self, database: str) -> str:
        db = self.db
        auth = quote(db.get("USER") or "postgres")
        if db.get("PASSWORD"):
            auth += ":" + quote(db["PASSWORD"])
        host = db.get("HOST") or "127.0.0.1"
        return f"postgresql://{auth}@{host}:{db.get('PORT') or 5432}/{database}"

    def admin(self) -> psycopg.Connection[Any]:
        if self._admin is None or self._admin.closed:
            name = self.db["NAME"] if self.db["NAME"].startswith("postgres") else "postgres"
            self._admin = psycopg.connect(self.url(name), autocommit=True)
        return self._admin

    def recreate(self, database: str) -> None:
        name = sql.Identifier(database)
        self.admin().execute(sql.SQL("drop database if exists {} with (force)").format(name))
        self.admin().execute(sql.SQL("create database {}").format(name))

    def ensure(self, database: str) -> None:
        found = self.admin().execute("select 1 from pg_database where datname = %s", (database,))
        if found.fetchone() is None:
            self.admin().execute(sql.SQL("create database {}").format(sql.Identifier(database)))

    def xacts(self, database: str) -> int:
        row = (
            self.admin()
            .execute(
                "select xact_commit + xact_rollback from pg_stat_database where datname = %s",
                (database,),
            )
            .fetchone()
        )
        assert row is not None
        return int(row[0])

    def sessions(self, database: str) -> int:
        row = (
            self.admin()
            .execute("select count(*) from pg_stat_activity where datname = %s", (database,))
            .fetchone()
        )
        assert row is not None
        return int(row[0])
