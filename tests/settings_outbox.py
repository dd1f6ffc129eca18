"""Settings of the subprocesses that ``tests/outbox/`` starts (relays, workers, callers).

The test suite's settings with two databases, both the ones pytest-django created for the parent
test run: ``default`` (``ULTIMAT3_OUTBOX_DB_NAME``), where callers' transactions run and
``x_outbox`` lives, and ``jobs`` (``ULTIMAT3_OUTBOX_JOBS_DB_NAME``), the job store. Because the
store is another alias, an enqueue inside ``transaction.atomic()`` on ``default`` is staged and
the relay publishes it. Timings are short so that kills and lease expiries play out in seconds.
"""

from __future__ import annotations

import os

from tests.settings import *  # noqa: F403
from tests.settings import DATABASES
from tests.settings import ULTIMAT3_JOBS as _BASE_JOBS

OUTBOX_APPLICATION_NAME = "ultimat3_jobs.outbox_test"
"""The ``application_name`` of every Django connection these subprocesses open, so a test can
find (and wait out) exactly their sessions."""


def _database(name: str) -> dict[str, object]:
    base = DATABASES["default"]
    return {
        **base,
        "NAME": name,
        "CONN_MAX_AGE": 60,
        "OPTIONS": {**base.get("OPTIONS", {}), "application_name": OUTBOX_APPLICATION_NAME},
    }


_test_name = f"test_{DATABASES['default']['NAME']}"

DATABASES = {
    "default": _database(os.environ.get("ULTIMAT3_OUTBOX_DB_NAME") or _test_name),
    "jobs": _database(os.environ.get("ULTIMAT3_OUTBOX_JOBS_DB_NAME") or f"{_test_name}_jobs"),
}

ULTIMAT3_JOBS: dict[str, object] = {  # type: ignore[no-redef]
    **_BASE_JOBS,
    "DATABASE": "jobs",
    "OUTBOX_DATABASE": "default",
    # A row claimed by a relay that was killed is taken again two seconds later.
    "RELAY_LEASE_SECONDS": 2,
    # Small batches, so that a kill often lands between a batch's publish and its mark.
    "RELAY_BATCH_SIZE": 20,
    "POLL_FLOOR_SECONDS": 0.02,
    "POLL_CEILING_SECONDS": 0.5,
    "POLL_CEILING_WAKE_SECONDS": 1,
    "VISIBILITY_TIMEOUT_SECONDS": 5,
    "HEARTBEAT_INTERVAL_SECONDS": 1,
    "RESCUE_INTERVAL_SECONDS": 1,
    "REGISTRY_INTERVAL_SECONDS": 2,
    "SHUTDOWN_GRACE_SECONDS": 3,
    "TIMEOUT_GRACE_SECONDS": 1,
}
