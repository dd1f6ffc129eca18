"""The parity suite's fixtures: every test runs once per driver."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.drivers.support import MemoryStore, PostgresStore
from ultimat3_jobs.drivers.base import JobDriver

DRIVERS = [
    pytest.param("memory", id="memory"),
    # The marker lets pytest-django see, at collection, that these tests need the test database.
    pytest.param("postgres", id="postgres", marks=pytest.mark.django_db),
]


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> Iterator[JobDriver]:
    built: JobDriver
    if request.param == "postgres":
        request.getfixturevalue("db")
        from ultimat3_jobs.drivers.postgres.driver import PostgresDriver

        built = PostgresDriver(database="default")
    else:
        from ultimat3_jobs.drivers.memory import MemoryDriver

        built = MemoryDriver()
    assert built.name == request.param
    yield built
    built.close()


@pytest.fixture
def store(driver: JobDriver) -> Any:
    if driver.name == "postgres":
        return PostgresStore()
    return MemoryStore(driver)
