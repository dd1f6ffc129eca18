"""Fixtures shared by the whole suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ultimat3_jobs.conf import reset_settings
from ultimat3_jobs.drivers import reset_drivers


@pytest.fixture(autouse=True)
def _fresh_driver_cache() -> Iterator[None]:
    """Each test builds its driver from the settings it runs under."""
    reset_settings()
    reset_drivers()
    yield
    reset_settings()
    reset_drivers()
