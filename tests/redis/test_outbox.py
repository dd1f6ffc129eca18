"""With Redis as the job store, an enqueue inside ``transaction.atomic()`` on the project's
database is staged in ``x_outbox`` and published by the relay after the commit: a rolled-back
transaction leaves no job, a committed one gets its job in Redis. Real commits throughout."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import transaction
from django.test import override_settings

from tests.drivers.conftest import drop_redis_store
from tests.outbox.test_outbox import RunningRelay
from tests.testapp import jobs
from tests.worker.conftest import wait_for
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.models import OutboxEntry
from ultimat3_jobs.types import JobState

pytestmark = pytest.mark.django_db(transaction=True)

REDIS_STORE = {"DRIVER": "redis", "REDIS_ALIAS": "redis", "DEFAULT_TENANT": "none"}


@pytest.fixture
def redis_jobs() -> Iterator[None]:
    with override_settings(ULTIMAT3_JOBS=REDIS_STORE):
        assert get_driver().name == "redis"
        try:
            yield
        finally:
            drop_redis_store(get_driver())


@pytest.mark.usefixtures("redis_jobs")
def test_an_enqueue_in_a_transaction_is_staged_then_published_to_redis() -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        rolled_back = jobs.noop.enqueue()
        assert rolled_back.status == "staged"
        raise RuntimeError("roll back")
    with transaction.atomic():
        kept = jobs.echo.enqueue(n=1)
        assert kept.status == "staged"
        assert get_driver().job_get(job_id=kept.id) is None, "written before the commit"
    assert not OutboxEntry.objects.filter(id=rolled_back.id).exists()
    with RunningRelay():
        record = wait_for(lambda: get_driver().job_get(job_id=kept.id), what="the publish")
    assert record.state is JobState.QUEUED and record.input == {"n": 1}
    assert get_driver().job_get(job_id=rolled_back.id) is None


@pytest.mark.usefixtures("redis_jobs")
def test_outside_a_transaction_the_job_is_written_to_redis_at_once() -> None:
    result = jobs.noop.enqueue()
    assert result.status == "created"
    assert get_driver().job_get(job_id=result.id) is not None
    assert not OutboxEntry.objects.exists()
