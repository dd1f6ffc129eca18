"""Build a Django ``DATABASES`` entry from a PostgreSQL URL (``DATABASE_URL``).

Understood forms::

    postgres://user:password@host:5432/name
    postgresql://user@127.0.0.1/name?sslmode=require
    postgresql://postgres:@/postgres?host=/path/to/socket/dir

User, password, host and database name are percent-decoded. A ``host`` (or ``port``) query
parameter overrides the one in the authority part, which is how a Unix socket directory is
given. Every other query parameter becomes a connection option (``OPTIONS``), handed to psycopg
as it is, e.g. ``sslmode`` or ``connect_timeout``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

SCHEMES = frozenset({"postgres", "postgresql"})
ENGINE = "django.db.backends.postgresql"
CONN_MAX_AGE = 60


def database_from_url(url: str) -> dict[str, Any]:
    """The ``DATABASES["default"]``-style dict for ``url``; ``ValueError`` when it is not one."""
    parts = urlsplit(url.strip())
    if parts.scheme not in SCHEMES:
        raise ValueError(
            f"unsupported database URL scheme {parts.scheme!r}: expected postgres:// or "
            "postgresql://"
        )

    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    if hostport.startswith("["):  # IPv6 literal: [::1]:5432
        host = hostport[1 : hostport.find("]")]
    else:
        host = hostport.partition(":")[0]
    try:
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"invalid port in database URL: {exc}") from None

    options = dict(parse_qsl(parts.query, keep_blank_values=True))
    host = options.pop("host", "") or unquote(host)
    port_text = options.pop("port", "") or (str(port) if port is not None else "")

    name = unquote(parts.path.removeprefix("/"))
    if not name and "service" not in options:
        raise ValueError("the database URL names no database (the path after the host)")

    return {
        "ENGINE": ENGINE,
        "NAME": name,
        "USER": unquote(user),
        "PASSWORD": unquote(password),
        "HOST": host,
        "PORT": port_text,
        "CONN_MAX_AGE": CONN_MAX_AGE,
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": options,
    }
