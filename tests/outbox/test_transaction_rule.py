"""The transaction rule, alias by alias, on both drivers: a job enqueued while
``transaction.atomic()`` blocks are open (on any alias) appears only once every one of them has
committed, and never after a rollback. Real commits throughout."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections, transaction
from django.test import override_settings

from tests.testapp import jobs
from tests.worker.conftest import wait_for
from ultimat3_jobs.drivers import get_driver, get_outbox
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.drivers.postgres.outbox import PostgresOutbox
from ultimat3_jobs.drivers.postgres.wake import WakeThrottle
from ultimat3_jobs.errors import JobDuplicate, JobOptionInvalid
from ultimat3_jobs.models import Job, OutboxEntry

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "jobs"])

ALIASES = ["default", "jobs"]
"""``default`` is the job store's own alias (and the outbox's); ``jobs`` is another one."""


@pytest.fixture(params=["postgres", "memory"])
def store(request: pytest.FixtureRequest) -> Iterator[JobDriver]:
    """The job store on ``default``, through either driver."""
    with override_settings(ULTIMAT3_JOBS={"DRIVER": request.param, "DEFAULT_TENANT": "none"}):
        yield get_driver()


def found(store: JobDriver, job_id: uuid.UUID) -> bool:
    return store.job_get(job_id=job_id) is not None


def found_by_another_thread(store: JobDriver, job_id: uuid.UUID) -> bool:
    answer: list[bool] = []

    def look() -> None:
        try:
            answer.append(found(store, job_id))
        finally:
            connections.close_all()

    thread = threading.Thread(target=look)
    thread.start()
    thread.join(10)
    return answer == [True]


@pytest.mark.parametrize("alias", ALIASES)
def test_a_rolled_back_transaction_leaves_no_job(store: JobDriver, alias: str) -> None:
    with pytest.raises(RuntimeError), transaction.atomic(using=alias):
        one = jobs.noop.enqueue()
        [many] = jobs.echo.enqueue_many([{"n": 1}])
        raise RuntimeError("roll back")
    assert not found(store, one.id)
    assert not found(store, many.id)
    assert not Job.objects.exists() and not OutboxEntry.objects.exists()


@pytest.mark.parametrize("alias", ALIASES)
def test_the_job_appears_at_the_commit_not_before(store: JobDriver, alias: str) -> None:
    with transaction.atomic(using=alias):
        result = jobs.noop.enqueue()
        assert not found_by_another_thread(store, result.id)
    assert found_by_another_thread(store, result.id)
    assert store.job_get(job_id=result.id).state == "queued"  # type: ignore[union-attr]


@pytest.mark.parametrize("alias", ALIASES)
def test_a_rolled_back_savepoint_drops_only_its_own_jobs(store: JobDriver, alias: str) -> None:
    with transaction.atomic(using=alias):
        kept = jobs.echo.enqueue(n=1)
        with pytest.raises(RuntimeError), transaction.atomic(using=alias):
            dropped = jobs.echo.enqueue(n=2)
            raise RuntimeError("roll back the savepoint")
    assert found(store, kept.id)
    assert not found(store, dropped.id)


@pytest.mark.parametrize(("outer", "inner"), [("default", "jobs"), ("jobs", "default")])
def test_every_open_transaction_must_commit(store: JobDriver, outer: str, inner: str) -> None:
    with pytest.raises(RuntimeError), transaction.atomic(using=outer):
        with transaction.atomic(using=inner):
            rolled_back = jobs.noop.enqueue()
        raise RuntimeError("the outer transaction rolls back after the inner one committed")
    assert not found(store, rolled_back.id)
    with transaction.atomic(using=outer), transaction.atomic(using=inner):
        committed = jobs.noop.enqueue()
        assert not found_by_another_thread(store, committed.id)
    assert found(store, committed.id)


@pytest.mark.parametrize("alias", ALIASES)
def test_publish_now_writes_at_once(store: JobDriver, alias: str) -> None:
    # On the PostgreSQL store's own alias the write is one more statement of the transaction;
    # anywhere else (and always on the memory driver) it is committed at once and stays.
    joins = store.name == "postgres" and alias == "default"
    with pytest.raises(RuntimeError), transaction.atomic(using=alias):
        result = jobs.noop.using(publish="now").enqueue()
        assert found_by_another_thread(store, result.id) is not joins
        raise RuntimeError("roll back")
    assert result.status == "created"
    assert found(store, result.id) is not joins


def test_a_key_enqueued_twice_in_one_transaction_dedupes_to_the_first(store: JobDriver) -> None:
    with transaction.atomic():
        first = jobs.echo.using(idempotency_key="order-1").enqueue(n=1)
        second = jobs.echo.using(idempotency_key="order-1").enqueue(n=2)
    assert (first.status, second.status) == ("created", "deduped")
    assert second.id == first.id
    assert found(store, first.id)


def test_a_key_held_by_a_rolled_back_transaction_is_free_again(store: JobDriver) -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        jobs.echo.using(idempotency_key="order-2").enqueue(n=1)
        raise RuntimeError("roll back")
    with transaction.atomic():
        again = jobs.echo.using(idempotency_key="order-2").enqueue(n=2)
    assert again.status == "created"
    assert store.job_get(job_id=again.id).input == {"n": 2}  # type: ignore[union-attr]


@pytest.mark.usefixtures("store")
def test_error_mode_is_answered_at_once_against_a_live_job() -> None:
    live = jobs.echo.using(idempotency_key="order-3").enqueue(n=1)
    with pytest.raises(JobDuplicate) as caught, transaction.atomic():
        jobs.echo.using(idempotency_key="order-3", on_conflict="error").enqueue(n=2)
    assert caught.value.existing_id == live.id


# -- another alias than the store's: the PostgreSQL driver waits for the commit ------------------


@override_settings(ULTIMAT3_JOBS={"DRIVER": "postgres", "DEFAULT_TENANT": "none"})
def test_a_transaction_on_another_alias_answers_staged_and_writes_at_its_commit() -> None:
    with transaction.atomic(using="jobs"):
        result = jobs.noop.enqueue()
        assert result.status == "staged" and result.staged
        assert not Job.objects.filter(id=result.id).exists()
        assert not OutboxEntry.objects.exists()
    assert Job.objects.get(id=result.id).state == "queued"


@override_settings(ULTIMAT3_JOBS={"DRIVER": "postgres", "DEFAULT_TENANT": "none"})
def test_error_mode_cannot_be_answered_for_a_job_that_waits_for_another_alias() -> None:
    with pytest.raises(JobOptionInvalid) as caught, transaction.atomic(using="jobs"):
        jobs.echo.using(idempotency_key="k", on_conflict="error").enqueue(n=1)
    assert (caught.value.field, caught.value.rule) == ("on_conflict", "staged-dedupe")
    assert not Job.objects.exists()


# -- the store on another alias: staged in x_outbox only under the outbox's transaction alone -----

OTHER_STORE = {"DRIVER": "postgres", "DEFAULT_TENANT": "none", "DATABASE": "jobs"}


def store_jobs(**filters: Any) -> list[Job]:
    return list(Job.objects.using("jobs").filter(**filters))


@override_settings(ULTIMAT3_JOBS=OTHER_STORE)
def test_a_transaction_on_the_stores_alias_joins_it() -> None:
    with pytest.raises(RuntimeError), transaction.atomic(using="jobs"):
        rolled_back = jobs.noop.enqueue()
        raise RuntimeError("roll back")
    with transaction.atomic(using="jobs"):
        committed = jobs.noop.enqueue()
    assert (rolled_back.status, committed.status) == ("created", "created")
    assert [job.id for job in store_jobs()] == [committed.id]
    assert not OutboxEntry.objects.exists()


@override_settings(ULTIMAT3_JOBS=OTHER_STORE)
def test_the_outbox_does_not_outlive_another_open_transaction() -> None:
    with pytest.raises(RuntimeError), transaction.atomic(using="jobs"):
        with transaction.atomic(using="default"):
            rolled_back = jobs.noop.enqueue()
        raise RuntimeError("the store's transaction rolls back after the outbox's committed")
    assert rolled_back.status == "staged"
    assert not OutboxEntry.objects.exists()
    assert not store_jobs()
    with transaction.atomic(using="jobs"), transaction.atomic(using="default"):
        committed = jobs.noop.enqueue()
    assert [job.id for job in store_jobs()] == [committed.id]


@override_settings(ULTIMAT3_JOBS={**OTHER_STORE, "DATABASE": "default", "OUTBOX_DATABASE": "jobs"})
def test_the_outbox_on_another_alias_stages_under_its_transaction() -> None:
    with pytest.raises(RuntimeError), transaction.atomic(using="jobs"):
        rolled_back = jobs.noop.enqueue()
        raise RuntimeError("roll back")
    with transaction.atomic(using="jobs"):
        staged = jobs.noop.enqueue()
    assert (rolled_back.status, staged.status) == ("staged", "staged")
    assert [row.id for row in OutboxEntry.objects.using("jobs").all()] == [staged.id]
    assert not Job.objects.exists()
    with transaction.atomic(using="default"):
        joined = jobs.noop.enqueue()
    assert joined.status == "created"
    assert [job.id for job in Job.objects.all()] == [joined.id]


@override_settings(ULTIMAT3_JOBS=OTHER_STORE)
def test_a_rolled_back_stage_leaves_the_relays_wake_to_the_next_one() -> None:
    outbox = get_outbox()
    assert isinstance(outbox, PostgresOutbox)
    outbox._throttle = WakeThrottle(60.0)  # one slot for the whole test
    woken = threading.Event()
    subscription = outbox.wake_subscribe(on_wake=lambda _: woken.set())
    assert subscription is not None
    try:
        wait_for(subscription.is_live, what="the relay's wake listener live")
        with pytest.raises(RuntimeError), transaction.atomic():
            jobs.noop.enqueue()
            raise RuntimeError("roll back")
        with transaction.atomic():
            assert jobs.noop.enqueue().staged
        assert woken.wait(2.0), "the rolled-back stage took the slot's only wake"
    finally:
        subscription.close()
