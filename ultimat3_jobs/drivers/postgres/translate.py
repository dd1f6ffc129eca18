"""The PostgreSQL driver speaks the seam's errors, never the database's.

Every public method of :class:`~ultimat3_jobs.drivers.postgres.driver.PostgresDriver` and
:class:`~ultimat3_jobs.drivers.postgres.outbox.PostgresOutbox` runs inside :func:`translated`:

- a store that cannot be reached (``OperationalError``, ``InterfaceError``: a lost connection, a
  restart, a killed backend) raises :class:`~ultimat3_jobs.errors.DriverUnavailable`, which the
  runtime retries once its connection is reset;
- any other database error (``DataError``, ``IntegrityError``, ``ProgrammingError``, ...: the
  store refused what was written) raises :class:`~ultimat3_jobs.errors.StoreRefused`, which is
  never retried as it is.

Both are chained to the database's error (``from exc``). Their message holds the error's class
and its primary message, plus the SQLSTATE; never its DETAIL or CONTEXT lines, which can quote
the whole row.
"""

from __future__ import annotations

import psycopg
from django.db import Error as DjangoDatabaseError
from django.db import InterfaceError, OperationalError

from ultimat3_jobs.drivers.translation import SeamTranslation, first_line
from ultimat3_jobs.errors import DriverUnavailable, StoreRefused

DATABASE_ERRORS: tuple[type[BaseException], ...] = (DjangoDatabaseError, psycopg.Error)
"""What the database may raise through Django's connection or a raw psycopg one."""

UNREACHABLE: tuple[type[BaseException], ...] = (
    OperationalError,
    InterfaceError,
    psycopg.OperationalError,
    psycopg.InterfaceError,
)
"""The database errors that say the store could not be reached, not that it refused data."""


def _sqlstate(exc: BaseException) -> str | None:
    for candidate in (exc, exc.__cause__):
        sqlstate = getattr(candidate, "sqlstate", None)
        if sqlstate:
            return str(sqlstate)
    return None


def _primary(exc: BaseException) -> str:
    """The error's one-line message: PostgreSQL's primary message when psycopg has it, else
    the first line of the error's text."""
    for candidate in (exc, exc.__cause__):
        diag = getattr(candidate, "diag", None)
        primary = getattr(diag, "message_primary", None) if diag is not None else None
        if primary:
            return str(primary).strip()
    return first_line(exc)


def seam_error(exc: BaseException) -> DriverUnavailable | StoreRefused:
    """The seam's error for a database error ``exc``."""
    sqlstate = _sqlstate(exc)
    reason = f"{type(exc).__name__}: {_primary(exc)}"
    if isinstance(exc, UNREACHABLE):
        told = f"{reason} (SQLSTATE {sqlstate})" if sqlstate else reason
        return DriverUnavailable(f"the job store cannot be reached: {told}", sqlstate=sqlstate)
    return StoreRefused(reason=reason, sqlstate=sqlstate)


_TRANSLATION = SeamTranslation(DATABASE_ERRORS, seam_error)

translated = _TRANSLATION.translated
"""Raise the seam's error in place of a database error raised inside the block."""

speaks_seam_errors = _TRANSLATION.speaks_seam_errors
"""Class decorator: every public method a class defines runs inside :func:`translated`."""
