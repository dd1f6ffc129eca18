"""The Redis driver's client and store key: what every family of its methods runs scripts on.

The client is the one django-redis builds for the cache alias ``REDIS_ALIAS``
(``django_redis.get_redis_connection``), so ``CACHES`` is the one place Redis is configured
(URL, pool, timeouts, TLS, Sentinel). It is taken at the first call, never when the driver is
built, so that building a driver (the system checks do) opens no connection.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

from django.core.cache import InvalidCacheBackendError
from django_redis import get_redis_connection

from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.drivers.redis.scripts import SCRIPTS
from ultimat3_jobs.errors import JobsConfigurationError

DEFAULT_PREFIX = "{ultimat3_jobs}"
"""The base key of the job store: a Redis Cluster hash tag, so every key shares one slot."""

_HASH_TAG = re.compile(r"^\{[^{}]+\}$")


class RedisStore:
    """The client and base key shared by the driver's method families."""

    def __init__(
        self, *, alias: str | None = None, prefix: str = DEFAULT_PREFIX, client: Any = None
    ) -> None:
        if not isinstance(prefix, str) or not _HASH_TAG.match(prefix):
            raise JobsConfigurationError(
                "the Redis driver's prefix must be one hash tag, '{' then a name then '}', so "
                f"that every key of the store shares one Redis Cluster slot; got {prefix!r}"
            )
        self.alias = alias if alias is not None else get_settings().redis_alias
        self.prefix = prefix
        self._client = client
        self._client_lock = threading.Lock()

    def redis(self) -> Any:
        """The client of the cache alias, taken at the first call."""
        client = self._client
        if client is not None:
            return client
        with self._client_lock:
            if self._client is None:
                try:
                    self._client = get_redis_connection(self.alias)
                except (InvalidCacheBackendError, NotImplementedError) as exc:
                    raise JobsConfigurationError(
                        f"ULTIMAT3_JOBS['REDIS_ALIAS'] names the cache alias {self.alias!r}, "
                        f"which gives no django-redis client ({type(exc).__name__}: {exc}); "
                        "the Redis driver needs a django_redis.cache.RedisCache there"
                    ) from exc
            return self._client

    def _run(self, name: str, args: Sequence[Any] = ()) -> Any:
        return SCRIPTS.run(self.redis(), name, self.prefix, args)
