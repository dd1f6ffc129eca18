"""Settings of the ``jobs_scheduler`` subprocesses that ``tests/scheduler/`` starts.

The test suite's settings, pointed at the database pytest-django created for the parent test run
(``ULTIMAT3_SCHEDULER_DB_NAME``), with a three-second leader lease so that kills and stalls fail
over in seconds. The installed apps are the suite's: of their tasks only ``tests.every_second``
is due every second (``tests.paris_daily`` fires once a day).
"""

from __future__ import annotations

import os

from tests.settings import *  # noqa: F403
from tests.settings import DATABASES, ULTIMAT3_JOBS

SCHEDULER_APPLICATION_NAME = "ultimat3_jobs.scheduler_test"
"""The ``application_name`` of every connection a scheduler subprocess opens, so a test can find
(and wait out) exactly those sessions."""

# Only the test database: a subprocess must never reach another one.
_default = DATABASES["default"]
DATABASES = {
    "default": {
        **_default,
        "NAME": os.environ.get("ULTIMAT3_SCHEDULER_DB_NAME") or f"test_{_default['NAME']}",
        "OPTIONS": {**_default.get("OPTIONS", {}), "application_name": SCHEDULER_APPLICATION_NAME},
    },
}

ULTIMAT3_JOBS = {
    **ULTIMAT3_JOBS,
    "SCHEDULER_LEASE_SECONDS": 3,
}
