"""Settings of the worker subprocesses that the Redis process tests start: those of
``tests/settings_process.py`` with the Redis driver as the job store (the suite's ``redis``
cache alias, so ``REDIS_URL`` picks the server). The test database stays the project's database:
the bodies write their effect rows there."""

from __future__ import annotations

from tests.settings_process import *  # noqa: F403
from tests.settings_process import ULTIMAT3_JOBS as PROCESS_JOBS

ULTIMAT3_JOBS = {**PROCESS_JOBS, "DRIVER": "redis", "REDIS_ALIAS": "redis"}
