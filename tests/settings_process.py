"""Settings of the worker subprocesses that ``tests/process/`` starts.

The test suite's settings, pointed at the database pytest-django created for the parent test run
(``ULTIMAT3_PROCESS_DB_NAME``), with the ``tests.processapp`` jobs declared and timings short
enough for crash, stall and shutdown scenarios to play out in seconds.
"""

from __future__ import annotations

import os

from tests.settings import *  # noqa: F403
from tests.settings import DATABASES, INSTALLED_APPS
from tests.settings import ULTIMAT3_JOBS as SUITE_JOBS

PROCESS_APPLICATION_NAME = "ultimat3_jobs.process_test"
"""The ``application_name`` of every Django connection a worker subprocess opens, so a test can
find (and terminate) exactly those backends."""

INSTALLED_APPS = [*INSTALLED_APPS, "tests.processapp"]

# Only the test database: a worker subprocess must never reach another one (the suite's other
# aliases name databases pytest-django may not have created for this run).
_default = DATABASES["default"]
DATABASES = {
    "default": {
        **_default,
        "NAME": os.environ.get("ULTIMAT3_PROCESS_DB_NAME") or f"test_{_default['NAME']}",
        "CONN_MAX_AGE": 60,
        "OPTIONS": {**_default.get("OPTIONS", {}), "application_name": PROCESS_APPLICATION_NAME},
    },
}

PROCESS_TIMINGS: dict[str, float] = {
    "VISIBILITY_TIMEOUT_SECONDS": 5,
    "HEARTBEAT_INTERVAL_SECONDS": 1,
    "RESCUE_INTERVAL_SECONDS": 1,
    "REGISTRY_INTERVAL_SECONDS": 2,
    "POLL_FLOOR_SECONDS": 0.02,
    "POLL_CEILING_SECONDS": 1,
    "POLL_CEILING_WAKE_SECONDS": 1,
    "SHUTDOWN_GRACE_SECONDS": float(os.environ.get("ULTIMAT3_PROCESS_SHUTDOWN_GRACE") or 3),
    "ACK_FLUSH_SECONDS": float(os.environ.get("ULTIMAT3_PROCESS_ACK_FLUSH") or 0.005),
    "TIMEOUT_GRACE_SECONDS": 1,
    # Every progress report is written at once, so a stale attempt's report reaches the fence.
    "PROGRESS_INTERVAL_SECONDS": 0,
    # A worker run --with-scheduler that is killed while it leads hands the lead on within
    # seconds (the scheduler's default lease is a minute, with no cron fired meanwhile).
    "SCHEDULER_LEASE_SECONDS": 3,
}
ULTIMAT3_JOBS = {**SUITE_JOBS, **PROCESS_TIMINGS}  # type: ignore[dict-item]  # str and float values
