"""Fixtures shared by the PostgreSQL driver's tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection


@pytest.fixture(params=[None, 5], ids=["django-default", "prepare_threshold=5"])
def threshold(request: pytest.FixtureRequest) -> Iterator[int | None]:
    """Django's default (no prepared statements), then an alias that asks for them; the
    connection reopens with the options of each."""
    options: dict[str, Any] = connection.settings_dict.setdefault("OPTIONS", {})
    before = dict(options)
    if request.param is not None:
        options["prepare_threshold"] = request.param
    connection.close()  # the next statement connects with these options
    yield request.param
    options.clear()
    options.update(before)
    connection.close()
