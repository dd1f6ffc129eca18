"""A job row keeps the ENQUEUER's tenant; a job whose tenant callable answers another tenant for
its input is refused with X_JOB_TENANT_MISMATCH, and nothing is written, on every enqueue path.
Each test runs on PostgreSQL and on the memory driver where the path exists on both."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import transaction
from django.test import override_settings

from tests.tenancy import jobs
from tests.tenancy.conftest import TENANCY
from ultimat3_jobs import cron
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.errors import (
    EnqueueRefused,
    JobDeclarationInvalid,
    JobInputInvalid,
    JobOptionInvalid,
    JobTenantMismatch,
    Terminal,
)
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.model.tenancy import input_tenant, tenant_scope
from ultimat3_jobs.models import OutboxEntry
from ultimat3_jobs.testing import fire_cron


@pytest.fixture(params=["postgres", "memory"])
def store(request: pytest.FixtureRequest, transactional_db: None) -> Iterator[JobDriver]:
    with override_settings(ULTIMAT3_JOBS={**TENANCY, "DRIVER": request.param}):
        yield get_driver()


def tenants(driver: JobDriver) -> list[str | None]:
    """The tenant of every job row there is."""
    return [job.tenant_id for job in driver.job_list(limit=100).jobs]


def row_tenant(driver: JobDriver, job_id: uuid.UUID) -> str | None:
    record = driver.job_get(job_id=job_id)
    assert record is not None
    return record.tenant_id


def test_the_row_keeps_the_enqueuers_tenant(store: JobDriver) -> None:
    with tenant_scope("acme"):
        result = jobs.read.enqueue(org="acme", document="acme-plan")
    assert row_tenant(store, result.id) == "acme"


def test_another_tenants_input_is_refused_and_nothing_is_written(store: JobDriver) -> None:
    with tenant_scope("acme"), pytest.raises(JobTenantMismatch) as caught:
        jobs.read.enqueue(org="globex", document="globex-plan")
    refused = caught.value
    assert refused.code == "X_JOB_TENANT_MISMATCH"
    assert (refused.field, refused.rule) == ("tenant", "tenant-of-enqueuer")
    assert "'globex'" in refused.message and "'acme'" in refused.message
    assert isinstance(refused, EnqueueRefused) and isinstance(refused, Terminal)
    assert tenants(store) == []


def test_an_enqueuer_with_no_tenant_cannot_enqueue_a_tenants_job(store: JobDriver) -> None:
    with pytest.raises(JobTenantMismatch):  # the resolver answers None: no scope
        jobs.read.enqueue(org="acme", document="acme-plan")
    assert tenants(store) == []


def test_using_tenant_overrides_the_resolver(store: JobDriver) -> None:
    with tenant_scope("acme"):
        result = jobs.read.using(tenant="globex").enqueue(org="globex", document="globex-plan")
        with pytest.raises(JobTenantMismatch):
            jobs.read.using(tenant=None).enqueue(org="acme", document="acme-plan")
        with pytest.raises(JobTenantMismatch):
            jobs.read.using(priority=1).using(tenant="globex").enqueue(org="acme", document="x")
    assert tenants(store) == ["globex"]
    assert row_tenant(store, result.id) == "globex"


def test_enqueue_many_refuses_the_whole_batch(store: JobDriver) -> None:
    inputs = [{"org": "acme", "document": "a"}] * 2 + [{"org": "globex", "document": "b"}]
    with tenant_scope("acme"), pytest.raises(JobTenantMismatch) as caught:
        jobs.read.enqueue_many(inputs)
    assert caught.value.field == "inputs[2].tenant"
    assert caught.value.message.startswith("inputs[2]: ")
    assert tenants(store) == []
    with tenant_scope("acme"):
        assert len(jobs.read.enqueue_many(inputs[:2])) == 2
    assert tenants(store) == ["acme", "acme"]


def test_a_job_of_no_tenant_keeps_its_enqueuers_tenant_on_the_row(store: JobDriver) -> None:
    with tenant_scope("acme"):
        result = jobs.system.enqueue(document="acme-plan")
    assert row_tenant(store, result.id) == "acme"
    assert row_tenant(store, jobs.system.enqueue(document="x").id) is None


def test_without_a_resolver_the_row_keeps_the_inputs_tenant(transactional_db: None) -> None:
    """A project that does not say who enqueues (no TENANT_RESOLVER, no using(tenant=...))
    keeps what the job's tenant rule answers, as before tenancy had an enqueuer."""
    settings = {**TENANCY, "TENANT_RESOLVER": None}
    with override_settings(ULTIMAT3_JOBS=settings), tenant_scope("acme"):
        result = jobs.read.enqueue(org="globex", document="globex-plan")
        assert row_tenant(get_driver(), result.id) == "globex"
        with pytest.raises(JobTenantMismatch):  # using() still says who enqueues
            jobs.read.using(tenant="acme").enqueue(org="globex", document="globex-plan")


def _raises() -> str:
    raise LookupError("no session")


@pytest.mark.parametrize(
    ("resolver", "rule"),
    [
        (_raises, "tenant-resolver"),
        (lambda: "x" * 201, "tenant-text"),
        (lambda: "a\x00", "tenant-text"),
    ],
)
def test_a_resolver_that_fails_refuses_the_enqueue(
    transactional_db: None, resolver: Any, rule: str
) -> None:
    with override_settings(ULTIMAT3_JOBS={**TENANCY, "TENANT_RESOLVER": resolver}):
        with pytest.raises(JobOptionInvalid) as caught:
            jobs.system.enqueue(document="x")
        assert (caught.value.field, caught.value.rule) == ("tenant", rule)
        assert tenants(get_driver()) == []


class _UndecidedDefinition:
    """A job definition's two attributes :func:`input_tenant` reads, its tenant rule raising."""

    name = "tests.tenancy.undecided"

    def tenant_for(self, input: Any) -> Any:
        raise KeyError("org")


def test_a_raising_tenant_hook_is_refused_naming_the_hook_and_its_error(
    transactional_db: None,
) -> None:
    """Both hooks (the resolver, a job's tenant callable) are asked by one helper; the two
    refusals keep their words."""
    resolving = override_settings(ULTIMAT3_JOBS={**TENANCY, "TENANT_RESOLVER": _raises})
    with resolving, pytest.raises(JobOptionInvalid) as resolver:
        jobs.system.enqueue(document="x")
    assert resolver.value.message == (
        "the enqueuer's tenant could not be decided: the TENANT_RESOLVER callable raised "
        "LookupError: no session"
    )
    with pytest.raises(JobInputInvalid) as rule:
        input_tenant(_UndecidedDefinition(), {})  # type: ignore[arg-type]
    assert rule.value.message == (
        "the tenant of job 'tests.tenancy.undecided' could not be decided from its input: "
        "KeyError: 'org'"
    )
    assert (rule.value.field, rule.value.rule) == ("tenant", "tenant-from-input")


def test_a_resolver_may_be_a_callable(transactional_db: None) -> None:
    with override_settings(ULTIMAT3_JOBS={**TENANCY, "TENANT_RESOLVER": lambda: "acme"}):
        result = jobs.read.enqueue(org="acme", document="acme-plan")
        assert row_tenant(get_driver(), result.id) == "acme"
        with pytest.raises(JobTenantMismatch):
            jobs.read.enqueue(org="globex", document="globex-plan")


def test_outbox_staging_refuses_before_it_stages(transactional_db: None) -> None:
    with override_settings(ULTIMAT3_JOBS=TENANCY), tenant_scope("acme"):
        with transaction.atomic():
            staged = jobs.read.using(publish="staged").enqueue(org="acme", document="a")
            with pytest.raises(JobTenantMismatch):
                jobs.read.using(publish="staged").enqueue(org="globex", document="b")
            with pytest.raises(JobTenantMismatch):
                jobs.read.using(publish="staged").enqueue_many([{"org": "globex", "document": "b"}])
        assert staged.staged
        assert list(OutboxEntry.objects.values_list("tenant_id", flat=True)) == ["acme"]


def test_an_enqueue_deferred_to_the_commit_refuses_at_once(store: JobDriver) -> None:
    with tenant_scope("acme"), transaction.atomic(), pytest.raises(JobTenantMismatch):
        jobs.read.enqueue(org="globex", document="b")
    assert tenants(store) == []


def test_a_cron_job_declares_no_tenant_and_fires_for_none(store: JobDriver) -> None:
    with pytest.raises(JobDeclarationInvalid) as caught:

        @cron(name="tests.tenancy.cron_org", cron="0 3 * * *", tz="UTC", tenant=lambda i: "acme")
        def cron_org(ctx: Any) -> None: ...

    assert "scheduler fires it for no tenant" in caught.value.message
    assert registry.find("tests.tenancy.cron_org") is None

    @cron(name="tests.tenancy.cron_none", cron="0 3 * * *", tz="UTC", tenant="none")
    def cron_none(ctx: Any) -> None: ...

    try:
        with tenant_scope("acme"):  # whatever scope the firing code runs in
            (fired,) = fire_cron(datetime(2026, 1, 1, 3, tzinfo=UTC), job=cron_none)
        assert row_tenant(store, fired.job_id) is None
    finally:
        registry.unregister(cron_none.name)
