"""Settings of the benchmark with the Redis driver as the job store.

The benchmark's PostgreSQL settings (``bench.settings``), with ``DRIVER: "redis"`` on a
django-redis cache alias of its own. ``ULTIMAT3_BENCH_REDIS_URL`` picks the server and database
(default ``redis://127.0.0.1:6379/11``); the side-by-side run empties the store's keys (the
driver's default prefix) before each round and touches no other key.
"""

from __future__ import annotations

import os

from bench.settings import *  # noqa: F403
from bench.settings import ULTIMAT3_JOBS as POSTGRES_JOBS

BENCH_REDIS_URL = os.environ.get("ULTIMAT3_BENCH_REDIS_URL") or "redis://127.0.0.1:6379/11"

CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "jobs": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": BENCH_REDIS_URL,
        "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 2, "SOCKET_TIMEOUT": 5},
    },
}

ULTIMAT3_JOBS = {**POSTGRES_JOBS, "DRIVER": "redis", "REDIS_ALIAS": "jobs"}
