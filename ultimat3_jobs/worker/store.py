"""The errors a worker loop survives: the store was unreachable, not the job wrong."""

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
