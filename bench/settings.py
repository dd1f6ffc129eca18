"""Settings of the benchmark: the test settings, pointed at a database of the benchmark's own.

``DATABASE_URL`` picks the PostgreSQL server (default: the one on 127.0.0.1:5432);
``ULTIMAT3_BENCH_DATABASE`` names the database on it (default ``ultimat3_bench``), which
``bench/run.py`` creates when missing and migrates.
"""

from __future__ import annotations

import os

from example_project.dburl import database_from_url
from tests.settings import *  # noqa: F403
from tests.settings import DEFAULT_DATABASE_URL

BENCH_DATABASE_DEFAULT = "ultimat3_bench"

_database = database_from_url(os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL)
_database["NAME"] = os.environ.get("ULTIMAT3_BENCH_DATABASE") or BENCH_DATABASE_DEFAULT
_database["CONN_MAX_AGE"] = 600

DATABASES = {"default": _database}
# Not the test suite's django-redis alias: nothing here uses it, and the system checks every
# command runs first build each cache (importing redis), a start-up a PostgreSQL-only
# deployment does not pay. ``bench/settings_redis.py`` names the caches of its own.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
DEBUG = False

# Throughput settings a user would choose for short jobs; everything else keeps its default
# (the poll floor and ceilings too, so the idle figures are the defaults').
ULTIMAT3_JOBS = {
    "DRIVER": "postgres",
    "DEFAULT_TENANT": "none",
    "WORKER_CONCURRENCY": 32,
}

# ``bench.stamp`` (bench/jobs.py), the job of the side-by-side run's latency samples.
INSTALLED_APPS = [*INSTALLED_APPS, "bench"]  # noqa: F405
