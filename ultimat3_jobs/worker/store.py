"""The errors a worker loop survives: the store was unreachable, not the job wrong."""

from __future__ import annotations

from django.db import Error as DatabaseError

from ultimat3_jobs.errors import DriverUnavailable

STORE_ERRORS: tuple[type[BaseException], ...] = (DatabaseError, DriverUnavailable)
