"""The limited jobs are registered only while a test of this package runs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.limits.jobs import HANDLES, HOOK_CALLS, SETTLED
from tests.worker.conftest import make_worker  # noqa: F401  (the worker fixture, shared)
from ultimat3_jobs.model.registry import registry

for _handle in HANDLES:  # declared at import; registered per test below
    registry.unregister(_handle.name)


@pytest.fixture(autouse=True)
def limited_jobs() -> Iterator[None]:
    SETTLED.clear()
    HOOK_CALLS.clear()
    for handle in HANDLES:
        registry.register(handle)
    yield
    for handle in HANDLES:
        registry.unregister(handle.name)
