"""Fixtures shared by the PostgreSQL driver's tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection

from ultimat3_jobs.drivers.postgres.driver import PostgresDriver

UNSTATED = "unstated"
"""The ``threshold`` of an alias whose ``OPTIONS`` name no ``prepare_threshold`` (Django's
default): the worker's statements are prepared on a direct session, nothing else is."""


@pytest.fixture(
    params=[UNSTATED, None, 5],
    ids=["django-default", "prepare_threshold=None", "prepare_threshold=5"],
)
def threshold(request: pytest.FixtureRequest) -> Iterator[int | str | None]:
    """Django's default (no ``prepare_threshold``), then an alias that states ``None`` (no
    prepared statements), then one that asks for them; the connection reopens with the options
    of each."""
    options: dict[str, Any] = connection.settings_dict.setdefault("OPTIONS", {})
    before = dict(options)
    options.pop("prepare_threshold", None)
    if request.param != UNSTATED:
        options["prepare_threshold"] = request.param
    connection.close()  # the next statement connects with these options
    yield request.param
    options.clear()
    options.update(before)
    connection.close()


@pytest.fixture
def driver() -> Iterator[PostgresDriver]:
    """A PostgreSQL driver of its own, closed after the test (its listeners with it)."""
    opened = PostgresDriver()
    try:
        yield opened
    finally:
        opened.close()
