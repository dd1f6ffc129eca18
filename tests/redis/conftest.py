"""Fixtures of the Redis driver's own tests: they need a Redis server (``REDIS_URL``), and each
runs on a store (key prefix) of its own, deleted after it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from tests.drivers.conftest import NO_REDIS, drop_redis_store, redis_driver
from tests.worker.conftest import make_worker
from ultimat3_jobs.drivers.redis import RedisDriver

__all__ = ["make_worker", "redis_store"]

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
