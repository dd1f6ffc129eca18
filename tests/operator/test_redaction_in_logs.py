"""A secret in a sensitive input field never reaches the logs: not at enqueue, not while a worker
runs the job, not when an operator lists or shows it without the permission."""

from __future__ import annotations

import logging
import uuid
from io import StringIO

import pytest
from django.core.management import call_command

from tests.testapp.jobs import secret
from tests.worker.conftest import make_worker, wait_for
from ultimat3_jobs.models import Job

__all__ = ["make_worker"]


@pytest.mark.django_db(transaction=True)
def test_a_sensitive_value_never_reaches_the_logs(make_worker, caplog) -> None:
    sentinel = f"S3CR3T-{uuid.uuid4()}"
    caplog.set_level(logging.DEBUG)
    result = secret.enqueue(account=7, api_token=sentinel)
    make_worker()
    wait_for(lambda: Job.objects.filter(id=result.id, state="completed").exists(), what="ran")
    # A dead letter to show: the same job again, moved to failed by hand.
    kept = secret.enqueue(account=8, api_token=sentinel)
    Job.objects.filter(id=kept.id).update(state="failed")
    out = StringIO()
    call_command("jobs", "show", str(kept.id), stdout=out)
    call_command("jobs", "list", "--json", stdout=out)
    assert sentinel not in out.getvalue()
    logged = "\n".join(f"{record.getMessage()} {record.__dict__}" for record in caplog.records)
    assert "jobs.worker.started" in logged, "the worker's logs were captured"
    assert sentinel not in logged
