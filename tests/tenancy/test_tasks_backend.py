"""A django.tasks task is enqueued like a job: its row keeps the enqueuer's tenant. A task
declares no tenant (``tenant="none"``), so no input can mismatch, and it runs with none."""

from __future__ import annotations

import uuid

import pytest

tasks_framework = pytest.importorskip("django.tasks", reason="django.tasks needs Django 6.0+")

from django.tasks import TaskResultStatus  # noqa: E402
from django.test import override_settings  # noqa: E402

from tests.tenancy.conftest import TENANCY  # noqa: E402
from tests.testapp import tenancy as policy  # noqa: E402
from tests.testapp.tasks import whose_tenant as whose  # noqa: E402
from tests.worker.conftest import wait_for  # noqa: E402
from ultimat3_jobs.drivers import get_driver  # noqa: E402
from ultimat3_jobs.model.tenancy import tenant_scope  # noqa: E402


def test_a_task_row_keeps_the_enqueuers_tenant_and_runs_with_none(make_worker) -> None:
    with override_settings(ULTIMAT3_JOBS=TENANCY):
        with tenant_scope("acme"):
            result = whose.enqueue()
        record = get_driver().job_get(job_id=uuid.UUID(result.id))
        assert record is not None and record.tenant_id == "acme"
        make_worker(queues=("default",))
        wait_for(
            lambda: whose.get_result(result.id).status == TaskResultStatus.SUCCESSFUL,
            timeout=60,
            what="the task",
        )
        assert whose.get_result(result.id).return_value == [None, None]
        assert None in policy.ENTERED
