"""Every testing-helper test runs on each driver, chosen through ULTIMAT3_JOBS['DRIVER'] as a
user's project would choose it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.testing import jobs as test_jobs
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.drivers.base import JobDriver

DRIVERS = [
    pytest.param("memory", id="memory"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.django_db),
]


@pytest.fixture(params=DRIVERS)
def driver(request: pytest.FixtureRequest, settings: object) -> Iterator[JobDriver]:
    if request.param == "postgres":
        request.getfixturevalue("db")
    settings.ULTIMAT3_JOBS = {"DRIVER": request.param, "DEFAULT_TENANT": "none"}  # type: ignore[attr-defined]
    test_jobs.CALLS.clear()
    test_jobs.SETTLED.clear()
    built = get_driver()
    assert built.name == request.param
    yield built


def calls(name: str) -> list[object]:
    return [seen for job_name, seen in test_jobs.CALLS if job_name == name]
