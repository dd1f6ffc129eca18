"""Fixtures of the Redis driver's own tests: they need a Redis server (``REDIS_URL``), and each
runs on a store (key prefix) of its own, deleted after it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings

from tests.drivers.conftest import NO_REDIS, drop_redis_store, redis_driver
from tests.worker.conftest import make_worker
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.drivers.redis import RedisDriver

__all__ = ["make_worker", "redis_store", "redis_worker"]

REDIS_STORE = {"DRIVER": "redis", "REDIS_ALIAS": "redis", "DEFAULT_TENANT": "none"}

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without REDIS_URL, the tests of this directory are skipped (``./scripts/test`` and CI
    set it, so there they always run)."""
    if settings.REDIS_URL:
        return
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.skip(reason=NO_REDIS))


@pytest.fixture
def redis_store() -> Iterator[RedisDriver]:
    if not settings.REDIS_URL:
        pytest.skip(NO_REDIS)
    driver = redis_driver()
    assert isinstance(driver, RedisDriver)
    yield driver
    driver.close()
    drop_redis_store(driver)


@pytest.fixture
def redis_worker(make_worker: Callable[..., Any]) -> Iterator[tuple[RedisDriver, Any]]:
    """The settings' driver is Redis (the public API enqueues there); yields it and
    ``make_worker``. The store is deleted after the test, which stops its workers first."""
    with override_settings(ULTIMAT3_JOBS=REDIS_STORE):
        driver = get_driver()
        assert isinstance(driver, RedisDriver)
        try:
            yield driver, make_worker
        finally:
            drop_redis_store(driver)
