"""The errors a worker loop survives: the store was unreachable, not the job wrong; and how a
refusal of the store is told without quoting the row it refused.

Only the seam's errors: each driver translates its database's own
(:class:`~ultimat3_jobs.errors.DriverUnavailable` for a store it cannot reach,
:class:`~ultimat3_jobs.errors.StoreRefused` for data the store refused), so nothing here knows
``django.db``.
"""

from __future__ import annotations

from ultimat3_jobs.errors import DriverUnavailable, StoreRefused

STORE_ERRORS: tuple[type[BaseException], ...] = (DriverUnavailable, StoreRefused)
"""Any error of the store: a loop logs it, resets its connection and tries again later."""

STORE_UNREACHABLE: tuple[type[BaseException], ...] = (DriverUnavailable,)
"""The store could not be reached (as opposed to refusing one row's data): the only error a
write is retried for as it is."""


def refusal(exc: BaseException) -> str:
    """What the store said, for an error entry and the log: for a :class:`StoreRefused`, the
    database's error class, primary message and SQLSTATE, never the DETAIL or CONTEXT lines
    that can quote the whole row (the job's input and result); for anything else, its class and
    the first line of its text."""
    if isinstance(exc, StoreRefused) and exc.reason:
        return f"{exc.reason} (SQLSTATE {exc.sqlstate})" if exc.sqlstate else exc.reason
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"
