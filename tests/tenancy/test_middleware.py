"""The same policy question ("may the current tenant read this document?") gets the same verdict
in a view, through ``TenantMiddleware``, and in a job, through the worker: same tenant, another
tenant, no tenant."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.test import Client, override_settings

from tests.tenancy import jobs
from tests.tenancy.conftest import TENANCY
from tests.testapp import tenancy as policy
from tests.worker.conftest import wait_for
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.errors import JobsConfigurationError
from ultimat3_jobs.model.tenancy import tenant_scope
from ultimat3_jobs.types import JobState

MIDDLEWARE = [*django_settings.MIDDLEWARE, "ultimat3_jobs.tenancy.TenantMiddleware"]
TENANTS = ["acme", "globex", None]
DOCUMENTS = ["acme-plan", "globex-plan", "missing"]


@pytest.fixture
def site() -> Iterator[None]:
    with override_settings(
        ULTIMAT3_JOBS=TENANCY, MIDDLEWARE=MIDDLEWARE, ROOT_URLCONF="tests.tenancy.urls"
    ):
        yield


def ask_in_a_view(tenant: str | None, document: str) -> dict[str, Any]:
    headers = {"X-Tenant": tenant} if tenant else {}
    response = Client().get(f"/policy/{document}", headers=headers)
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


def test_a_view_and_a_job_give_the_same_verdicts(
    site: None, transactional_db: None, make_worker: Any
) -> None:
    asked = [(tenant, document) for tenant in TENANTS for document in DOCUMENTS]
    in_views = {pair: ask_in_a_view(*pair) for pair in asked}
    ids = {}
    for tenant, document in asked:
        with tenant_scope(tenant):  # the enqueuer is that tenant, as in its own request
            ids[tenant, document] = jobs.read.enqueue(org=tenant, document=document).id
    driver = get_driver()
    make_worker(driver=driver, queues=(jobs.QUEUE,))
    records = {}
    for pair, job_id in ids.items():
        record = wait_for(
            lambda job_id=job_id: (
                (r := driver.job_get(job_id=job_id)) and r.state == JobState.COMPLETED and r
            ),
            timeout=60,
            what=f"the job for {pair}",
        )
        records[pair] = record.result
    for pair in asked:
        assert in_views[pair]["may_read"] == records[pair]["may_read"], pair
        assert in_views[pair]["tenant"] == records[pair]["tenant"] == pair[0], pair
    verdicts = [in_views[pair]["may_read"] for pair in asked]
    assert verdicts == [True, False, False, False, True, False, False, False, False]


def test_the_scope_ends_with_the_request(site: None, db: None) -> None:
    assert ask_in_a_view("acme", "acme-plan") == {"tenant": "acme", "may_read": True}
    assert policy.current() is None
    assert policy.ENTERED == ["acme"]


def test_the_middleware_needs_its_setting(db: None) -> None:
    settings = {**TENANCY, "TENANT_FROM_REQUEST": None}
    with (
        override_settings(
            ULTIMAT3_JOBS=settings, MIDDLEWARE=MIDDLEWARE, ROOT_URLCONF="tests.tenancy.urls"
        ),
        pytest.raises(JobsConfigurationError, match="TENANT_FROM_REQUEST"),
    ):
        Client().get("/policy/acme-plan", headers={"X-Tenant": "acme"})
