"""Find the example project's database URL, and build a Django ``DATABASES`` entry from it.

:func:`resolve_database_url` answers ``DATABASE_URL`` when it is set, else the URL of the
embedded PostgreSQL that ``./scripts/demo`` runs in ``.local/pgdata-demo``, read from the
``postmaster.pid`` file the server keeps in its data directory while it runs. So
``python manage.py jobs ...`` beside a running demo finds the demo's database by itself.

:func:`database_from_url` turns a URL into a ``DATABASES`` entry with ``dj-database-url``, e.g.::

    postgres://user:password@host:5432/name
    postgresql://user@127.0.0.1/name?sslmode=require
    postgresql://postgres:@/postgres?host=/path/to/socket/dir

A ``host`` (or ``port``) query parameter overrides the one in the authority part, which is how a
Unix socket directory is given. ``currentSchema=NAME`` sets the search path. Every other query
parameter becomes a connection option (``OPTIONS``), handed to psycopg, e.g. ``sslmode`` or
``connect_timeout``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import dj_database_url

SCHEMES = frozenset({"postgres", "postgresql"})
CONN_MAX_AGE = 60
DEMO_DATA_DIR = Path(".local") / "pgdata-demo"
"""Where ``./scripts/demo`` keeps its embedded server, under the repository root."""


class NoDatabaseURL(LookupError):
    """``DATABASE_URL`` is unset and no demo server runs."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, run by another user (the server runs as its own user)
        return True
    except OSError:
        return False
    return True


def running_server_url(data_dir: Path) -> str | None:
    """The URL of the PostgreSQL server that runs on ``data_dir``, or ``None`` when none does.

    A running server keeps ``postmaster.pid`` in its data directory: its pid on the first line,
    its port on the fourth, its Unix socket directory on the fifth, and the address it listens
    on over TCP on the sixth. The file stays behind when the server is killed, so a pid that no
    longer runs answers ``None``. The user and database are the embedded server's:
    ``postgres`` and ``postgres``."""
    try:
        lines = (data_dir / "postmaster.pid").read_text().splitlines()
        pid, port = int(lines[0]), int(lines[3])
    except (OSError, ValueError, IndexError):
        return None
    if pid <= 0 or not _alive(pid):
        return None
    socket_dir = lines[4].strip() if len(lines) > 4 else ""
    if socket_dir:
        return f"postgresql://postgres:@/postgres?host={quote(socket_dir, safe='/')}&port={port}"
    listen = lines[5].strip().split(",")[0].strip() if len(lines) > 5 else ""
    if not listen:
        return None
    host = "127.0.0.1" if listen in {"*", "0.0.0.0"} else listen
    host = f"[{host}]" if ":" in host else host
    return f"postgresql://postgres:@{host}:{port}/postgres"


def resolve_database_url(environ: Mapping[str, str], base_dir: Path) -> str:
    """``DATABASE_URL`` from ``environ`` when set, else the URL of the demo's embedded server
    (:data:`DEMO_DATA_DIR` under ``base_dir``) when it runs; :class:`NoDatabaseURL` otherwise."""
    url = environ.get("DATABASE_URL", "").strip()
    if url:
        return url
    found = running_server_url(base_dir / DEMO_DATA_DIR)
    if found is None:
        raise NoDatabaseURL(
            "DATABASE_URL is not set and the demo's embedded PostgreSQL is not running (no "
            f"live server in {DEMO_DATA_DIR}). Start it with ./scripts/demo, or set "
            "DATABASE_URL=postgres://USER:PASSWORD@HOST:5432/NAME."
        )
    return found


def database_from_url(url: str) -> dict[str, Any]:
    """The ``DATABASES["default"]``-style dict for ``url``, parsed by ``dj-database-url``;
    ``ValueError`` when it is not a PostgreSQL URL.

    ``dj-database-url`` leaves the ``host`` and ``port`` query parameters in ``OPTIONS``, where
    psycopg finds them but ``HOST``, ``PORT`` and ``manage.py dbshell`` do not: they are moved
    to ``HOST`` and ``PORT``, so the embedded server's socket directory lands where Django's
    tools look for it."""
    scheme = urlsplit(url.strip()).scheme
    if scheme not in SCHEMES:
        raise ValueError(
            f"unsupported database URL scheme {scheme!r}: expected postgres:// or postgresql://"
        )
    database: dict[str, Any] = dict(
        dj_database_url.parse(url.strip(), conn_max_age=CONN_MAX_AGE, conn_health_checks=True)
    )
    options = database.setdefault("OPTIONS", {})
    for key in ("host", "port"):
        if key in options:
            database[key.upper()] = options.pop(key)
    return database
