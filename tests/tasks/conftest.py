"""The backend tests run tasks on a real worker, as the worker tests do."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from tests.worker.conftest import make_worker

__all__ = ["make_worker"]


@pytest.fixture(autouse=True)
def close_asgiref_thread_connections() -> Iterator[None]:
    """Async tasks read and send signals on asgiref's long-lived thread, whose connections
    persist (CONN_MAX_AGE); close them after each test (and its worker), or the test database
    cannot be dropped."""
    yield
    asyncio.run(sync_to_async(connections.close_all, thread_sensitive=True)())
