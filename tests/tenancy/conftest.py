"""The tenancy jobs are registered only while a test of this package runs; the policy's record
of entered scopes starts empty."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.tenancy.jobs import HANDLES, SETTLED
from tests.testapp import tenancy as policy
from tests.worker.conftest import make_worker  # noqa: F401  (the worker fixture, shared)
from ultimat3_jobs.model.registry import registry

for _handle in HANDLES:  # declared at import; registered per test below
    registry.unregister(_handle.name)

POLICY = "tests.testapp.tenancy"
TENANCY = {
    "DEFAULT_TENANT": "none",
    "TENANT_RESOLVER": "ultimat3_jobs.model.tenancy.current_tenant",
    "TENANT_CONTEXT": f"{POLICY}.scope",
    "TENANT_FROM_REQUEST": f"{POLICY}.tenant_from_request",
}
"""The settings of a project with tenancy: the enqueuer's tenant is the scope's."""


@pytest.fixture(autouse=True)
def tenancy_jobs() -> Iterator[None]:
    SETTLED.clear()
    policy.ENTERED.clear()
    for handle in HANDLES:
        registry.register(handle)
    yield
    for handle in HANDLES:
        registry.unregister(handle.name)
