"""Transactional enqueue: on the job store's own database a job is written in the caller's
transaction; on another store it is staged in x_outbox and published by the relay after
commit. Real commits throughout."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest
from django.db import connections, transaction
from django.test import override_settings

from tests.factories import OutboxEntryFactory
from tests.testapp import jobs
from tests.worker.conftest import wait_for
from ultimat3_jobs.drivers import get_driver, get_outbox
from ultimat3_jobs.errors import JobOptionInvalid, OutboxNoTransaction
from ultimat3_jobs.factories import published_outbox
from ultimat3_jobs.models import Job, OutboxEntry
from ultimat3_jobs.runtime.relay import Relay, RelayConfig

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "jobs"])

OTHER_STORE = {"DRIVER": "postgres", "DEFAULT_TENANT": "none", "DATABASE": "jobs"}
FAST_RELAY = {"poll_floor": 0.01, "poll_ceiling": 0.1, "poll_ceiling_wake": 0.2}


def jobs_in_store(**filters: object) -> list[Job]:
    return list(Job.objects.using("jobs").filter(**filters))


@pytest.fixture
def other_store() -> Iterator[None]:
    with override_settings(ULTIMAT3_JOBS=OTHER_STORE):
        yield


class RunningRelay:
    def __init__(self, **options: object) -> None:
        config = RelayConfig(relay_id=f"relay-{uuid.uuid4().hex[:6]}", **{**FAST_RELAY, **options})
        self.relay = Relay(get_outbox(), get_driver(), config)
        self.thread = threading.Thread(target=self.relay.run, name="jobs-test-relay", daemon=True)

    def __enter__(self) -> Relay:
        self.thread.start()
        assert self.relay.started.wait(10)
        return self.relay

    def __exit__(self, *exc: object) -> None:
        self.relay.request_stop()
        self.thread.join(10)
        assert not self.thread.is_alive()


def test_same_database_enqueue_commits_with_the_transaction() -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        jobs.noop.enqueue()
        raise RuntimeError("roll back")
    assert not Job.objects.exists()
    with transaction.atomic():
        result = jobs.noop.enqueue()
    assert result.status == "created"
    assert Job.objects.filter(id=result.id).exists()
    assert not OutboxEntry.objects.exists()


@pytest.mark.usefixtures("other_store")
def test_another_store_stages_in_the_callers_transaction() -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        rolled_back = jobs.noop.enqueue()
        assert rolled_back.status == "staged"
        raise RuntimeError("roll back")
    with transaction.atomic():
        kept = jobs.echo.enqueue(n=1)
        assert OutboxEntry.objects.filter(id=kept.id).exists()
        assert not jobs_in_store()
    assert kept.status == "staged" and kept.staged
    assert not OutboxEntry.objects.filter(id=rolled_back.id).exists()
    with RunningRelay() as relay:
        # The job is in the store before its row is marked and counted: wait for the count.
        wait_for(lambda: relay.published_count == 1, what="the staged job published")
    assert relay.published_count == 1
    [job] = jobs_in_store()
    assert job.id == kept.id and job.input == {"n": 1} and job.state == "queued"
    assert OutboxEntry.objects.get(id=kept.id).published_at is not None


@pytest.mark.usefixtures("other_store")
def test_outside_a_transaction_the_store_is_written_at_once() -> None:
    result = jobs.noop.enqueue()
    assert result.status == "created"
    assert jobs_in_store(id=result.id)
    assert not OutboxEntry.objects.exists()


@pytest.mark.usefixtures("other_store")
def test_publish_now_writes_the_store_even_inside_a_transaction() -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        result = jobs.noop.using(publish="now").enqueue()
        raise RuntimeError("roll back")
    assert result.status == "created"
    assert jobs_in_store(id=result.id), "publish='now' does not wait for the commit"


@pytest.mark.usefixtures("other_store")
def test_a_staged_enqueue_with_no_transaction_is_refused() -> None:
    with pytest.raises(OutboxNoTransaction) as caught:
        jobs.noop.using(publish="staged").enqueue()
    assert caught.value.code == "X_OUTBOX_NO_TRANSACTION"
    assert "transaction.atomic(using='default')" in caught.value.message
    assert not OutboxEntry.objects.exists() and not jobs_in_store()


@pytest.mark.usefixtures("other_store")
def test_error_mode_cannot_be_answered_for_a_staged_job() -> None:
    with pytest.raises(JobOptionInvalid) as caught, transaction.atomic():
        jobs.echo.using(idempotency_key="k", on_conflict="error").enqueue()
    assert caught.value.field == "on_conflict"
    assert not OutboxEntry.objects.exists()


@pytest.mark.usefixtures("other_store")
def test_idempotency_keys_hold_at_publish() -> None:
    with transaction.atomic():
        first = jobs.echo.using(idempotency_key="order-7").enqueue(n=1)
        second = jobs.echo.using(idempotency_key="order-7").enqueue(n=2)
    with RunningRelay():
        wait_for(lambda: OutboxEntry.objects.filter(published_at__isnull=True).count() == 0)
    live = jobs_in_store(idempotency_key="order-7")
    assert [job.id for job in live] == [first.id]
    assert second.id != first.id


@pytest.mark.usefixtures("other_store")
def test_a_repeated_publish_is_answered_deduped() -> None:
    with transaction.atomic():
        staged = jobs.echo.enqueue(n=3)
    request = get_outbox().outbox_claim(relay_id="r", limit=10, lease_seconds=30)
    assert [r.id for r in request] == [staged.id]
    assert get_driver().job_enqueue_many(requests=request)[0].status == "created"
    assert get_driver().job_enqueue_many(requests=request)[0].status == "deduped"
    assert len(jobs_in_store()) == 1


@pytest.mark.usefixtures("other_store")
def test_enqueue_many_stages_every_job() -> None:
    with transaction.atomic():
        results = jobs.add.enqueue_many([{"a": i, "b": 1} for i in range(1500)])
    assert {r.status for r in results} == {"staged"}
    with RunningRelay(batch_size=500) as relay:
        wait_for(lambda: relay.published_count == 1500, what="1,500 published")
    assert len(jobs_in_store(name="tests.add")) == 1500


@pytest.mark.usefixtures("other_store")
def test_a_batch_the_store_refuses_goes_row_by_row_in_order() -> None:
    with transaction.atomic():
        good = [jobs.noop.enqueue() for _ in range(3)]
    # A row the job store refuses (priority outside its check constraint) in the middle.
    bad = OutboxEntryFactory(name="tests.noop", priority=500)
    with RunningRelay() as relay:
        wait_for(lambda: relay.published_count == 3)
        wait_for(lambda: OutboxEntry.objects.get(id=bad.id).publish_attempts >= 1)
    assert {job.id for job in jobs_in_store()} == {r.id for r in good}
    refused = OutboxEntry.objects.get(id=bad.id)
    assert refused.published_at is None
    assert "x_jobs_priority_range" in refused.last_error


@pytest.mark.usefixtures("other_store")
def test_a_later_transaction_committing_first_never_hides_an_earlier_one() -> None:
    held_open = threading.Event()
    release = threading.Event()
    staged: dict[str, uuid.UUID] = {}

    def slow_caller() -> None:
        try:
            with transaction.atomic():
                staged["early"] = jobs.echo.enqueue(order="early").id
                held_open.set()
                release.wait(20)
        finally:
            connections.close_all()

    caller = threading.Thread(target=slow_caller)
    caller.start()
    assert held_open.wait(10)
    with transaction.atomic():
        staged["late"] = jobs.echo.enqueue(order="late").id
    with RunningRelay() as relay:
        wait_for(lambda: jobs_in_store(id=staged["late"]), what="the later commit published")
        release.set()
        caller.join(10)
        wait_for(lambda: jobs_in_store(id=staged["early"]), what="the earlier id published too")
        wait_for(lambda: relay.published_count == 2, what="both rows marked published")


@pytest.mark.usefixtures("other_store")
def test_the_relay_deletes_nothing_the_purges_outbox_target_deletes_published_rows() -> None:
    with transaction.atomic():
        staged = jobs.noop.enqueue()
    with RunningRelay() as relay:
        wait_for(lambda: relay.published_count == 1, what="the staged row published")
    kept = OutboxEntryFactory().id  # unpublished: never deleted
    assert OutboxEntry.objects.filter(id=staged.id, published_at__isnull=False).exists()
    target = published_outbox(retention=0)
    cutoff = get_driver().clock_now()
    assert target.count(cutoff, 10) == 1
    assert target.delete(cutoff, 10) == 1
    assert list(OutboxEntry.objects.values_list("id", flat=True)) == [kept]
    assert jobs_in_store(id=staged.id)


@pytest.mark.usefixtures("other_store")
def test_a_due_staged_job_publishes_as_due_now_and_wakes_workers() -> None:
    with transaction.atomic():
        due = jobs.noop.enqueue()
        later = jobs.noop.using(delay=3600).enqueue()
    claimed = {r.id: r for r in get_outbox().outbox_claim(relay_id="r", limit=10, lease_seconds=30)}
    assert claimed[due.id].run_at is None, "published as due now, so the publish notifies"
    assert claimed[later.id].run_at is not None
