"""The errors a worker loop survives: the store was unreachable, not the job wrong; and how a
refusal of the store is told without quoting the row it refused."""

from __future__ import annotations

from django.db import Error as DatabaseError
from django.db import InterfaceError, OperationalError

from ultimat3_jobs.errors import DriverUnavailable

STORE_ERRORS: tuple[type[BaseException], ...] = (DatabaseError, DriverUnavailable)
"""Any error of the store: a loop logs it, resets its connection and tries again later."""

STORE_UNREACHABLE: tuple[type[BaseException], ...] = (
    OperationalError,
    InterfaceError,
    DriverUnavailable,
)
"""The store could not be reached (as opposed to refusing one row's data)."""


def refusal(exc: BaseException) -> str:
    """What the database said, for an error entry and the log: its class, its first line and
    SQLSTATE. Never its DETAIL or CONTEXT lines, which can quote the whole row (the job's
    input and result)."""
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0] if lines else ''}"
    sqlstate = getattr(exc.__cause__, "sqlstate", None) or getattr(exc, "sqlstate", None)
    return f"{text} (SQLSTATE {sqlstate})" if sqlstate else text
