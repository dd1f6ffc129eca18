"""The parity suite's fixtures: every test runs once per driver. The Redis leg runs wherever
``REDIS_URL`` is set (``./scripts/test`` sets it), each test on a store of its own key prefix,
deleted after it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings

from tests.drivers.support import store_controls
from ultimat3_jobs.drivers.base import JobDriver

NO_REDIS = "REDIS_URL is not set: the Redis leg needs a Redis server"

DRIVERS = [
    pytest.param("memory", id="memory"),
    # The marker lets pytest-django see, at collection, that these tests need the test database.
    pytest.param("postgres", id="postgres", marks=pytest.mark.django_db),
    pytest.param(
        "redis", id="redis", marks=pytest.mark.skipif(not settings.REDIS_URL, reason=NO_REDIS)
    ),
]


def redis_driver() -> JobDriver:
    """A Redis driver on the tests' "redis" cache, with a store (key prefix) of its own."""
    from ultimat3_jobs.drivers.redis import RedisDriver

    return RedisDriver(alias="redis", prefix=f"{{ultimat3_jobs-test-{uuid.uuid4().hex}}}")


def drop_redis_store(driver: Any) -> None:
    """Delete every key of the driver's store (its prefix), and nothing else."""
    client = driver.redis()
    keys = list(client.scan_iter(match=f"{driver.prefix}*", count=1000))
    if keys:
        client.delete(*keys)


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> Iterator[JobDriver]:
    built: JobDriver
    if request.param == "postgres":
        request.getfixturevalue("db")
        from ultimat3_jobs.drivers.postgres.driver import PostgresDriver

        built = PostgresDriver(database="default")
    elif request.param == "redis":
        built = redis_driver()
    else:
        from ultimat3_jobs.drivers.memory import MemoryDriver

        built = MemoryDriver()
    assert built.name == request.param
    yield built
    built.close()
    if request.param == "redis":
        drop_redis_store(built)


@pytest.fixture
def store(driver: JobDriver) -> Any:
    return store_controls(driver)
