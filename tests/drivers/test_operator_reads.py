"""job_list, queue_stats, counter_read and counter_total: what the operator surface reads."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from tests.drivers.support import (
    HOUR,
    RedisControls,
    ack,
    attempt_error,
    claim_one,
    enqueue,
    get,
    put_in_state,
    request,
    utcnow,
)
from tests.factories import JobCounterFactory
from ultimat3_jobs.drivers.base import JOB_PAGE_MAX, JobDriver
from ultimat3_jobs.errors import JobPageInvalid
from ultimat3_jobs.types import CounterTotal, JobState, QueueStats


def ids(page) -> list[uuid.UUID]:
    return [job.id for job in page.jobs]


def in_state(driver: JobDriver, state: str, **overrides) -> uuid.UUID:
    job_id = enqueue(driver, **overrides)
    put_in_state(driver, job_id, state)
    return job_id


def add_counter(driver: JobDriver, name: str, period: str, bucket: datetime, **counts: int):
    """Write one counter row directly, as a rollup would (the statements write minute rows
    only)."""
    if driver.name == "postgres":
        JobCounterFactory(name=name, period=period, bucket=bucket, **counts)
    elif driver.name == "redis":
        RedisControls(driver).put_counter(name, period, bucket, **counts)
    else:
        row = dict.fromkeys(("completed", "retried", "dead", "dropped", "refused", "cancelled"), 0)
        row.update(counts)
        driver._counters[(name, period, bucket)] = row  # type: ignore[attr-defined]


# -- job_list -------------------------------------------------------------------------------


def test_job_list_empty_store_is_one_empty_page(driver):
    page = driver.job_list()
    assert (page.jobs, page.next_cursor) == ((), None)


def test_job_list_is_newest_first_and_pages_by_cursor(driver):
    created = [enqueue(driver, input_json=f'{{"n":{n}}}') for n in range(7)]
    newest_first = list(reversed(created))
    first = driver.job_list(limit=3)
    assert ids(first) == newest_first[:3]
    assert first.next_cursor == newest_first[2]
    second = driver.job_list(limit=3, after=first.next_cursor)
    assert ids(second) == newest_first[3:6]
    third = driver.job_list(limit=3, after=second.next_cursor)
    assert ids(third) == newest_first[6:]
    assert third.next_cursor is None


def test_job_list_page_that_ends_exactly_at_the_last_job_has_no_cursor(driver):
    created = [enqueue(driver) for _ in range(4)]
    page = driver.job_list(limit=4)
    assert ids(page) == list(reversed(created))
    assert page.next_cursor is None


def test_job_list_orders_a_batch_sharing_created_at_by_id(driver):
    requests = [request(input_json=f'{{"n":{n}}}') for n in range(5)]
    driver.job_enqueue_many(requests=requests)
    expected = sorted((r.id for r in requests), reverse=True)
    first = driver.job_list(limit=2)
    rest = driver.job_list(limit=10, after=first.next_cursor)
    assert ids(first) + ids(rest) == expected


def test_job_list_cursor_is_a_job_id_and_may_be_given_as_text(driver):
    created = [enqueue(driver) for _ in range(3)]
    page = driver.job_list(limit=10, after=str(created[2]))
    assert ids(page) == [created[1], created[0]]
    # As pasted from the CLI's "next page: --after ..." line, spaces and all.
    pasted = driver.job_list(limit=10, after=f" {created[2]}\n")
    assert ids(pasted) == [created[1], created[0]]


def test_job_list_cursor_seeks_by_the_row_even_outside_the_filters(driver):
    # The cursor names a position, not a query: it may be a job the filters leave out.
    old = enqueue(driver, queue="math")
    cursor = enqueue(driver, queue="emails")
    newer = enqueue(driver, queue="math")
    page = driver.job_list(queues=["math"], after=cursor)
    assert ids(page) == [old]
    assert newer not in ids(page)


def test_job_list_cursor_of_a_removed_job_is_refused(driver):
    enqueue(driver)
    gone = enqueue(driver)
    assert driver.job_remove(job_id=gone)
    with pytest.raises(JobPageInvalid) as caught:
        driver.job_list(after=gone)
    assert caught.value.code == "X_JOB_PAGE_INVALID"
    with pytest.raises(JobPageInvalid):
        driver.job_list(after=uuid.uuid4())


def test_job_list_cursor_of_the_oldest_job_answers_an_empty_page(driver):
    oldest = enqueue(driver)
    enqueue(driver)
    page = driver.job_list(after=oldest)
    assert (page.jobs, page.next_cursor) == ((), None)


@pytest.mark.parametrize("limit", [0, -1, JOB_PAGE_MAX + 1, True, 2.5, "10"])
def test_job_list_page_size_is_bounded(driver, limit):
    with pytest.raises(JobPageInvalid) as caught:
        driver.job_list(limit=limit)
    assert caught.value.code == "X_JOB_PAGE_INVALID"


def test_job_list_largest_page_is_allowed(driver):
    enqueue(driver)
    assert len(driver.job_list(limit=JOB_PAGE_MAX).jobs) == 1


@pytest.mark.parametrize(
    "arguments",
    [
        {"states": ["queued", "lost"]},
        {"states": "queued"},
        {"queues": "default"},
        {"names": [1]},
        {"after": "not-a-job-id"},
        {"tenant": 7},
    ],
)
def test_job_list_invalid_request_is_refused(driver, arguments):
    with pytest.raises(JobPageInvalid):
        driver.job_list(**arguments)


def test_job_list_filters_by_state_queue_name_and_tenant(driver):
    running = in_state(driver, "running")
    failed = in_state(driver, "failed")
    queued = enqueue(driver)
    math = enqueue(driver, queue="math", name="tests.add", tenant_id="acme")
    other_tenant = enqueue(driver, queue="math", name="tests.add", tenant_id="globex")

    assert ids(driver.job_list(states=["failed", "running"])) == [failed, running]
    assert ids(driver.job_list(states=[JobState.QUEUED])) == [other_tenant, math, queued]
    assert ids(driver.job_list(queues=["math"])) == [other_tenant, math]
    assert ids(driver.job_list(names=["tests.echo"])) == [queued, failed, running]
    assert ids(driver.job_list(tenant="acme")) == [math]
    assert ids(driver.job_list(queues=["math"], states=["running"])) == []
    assert ids(driver.job_list(names=["tests.add", "tests.echo"], tenant="globex")) == [
        other_tenant
    ]
    # An empty filter means any, like None.
    assert len(driver.job_list(states=[], queues=[], names=[]).jobs) == 5


def test_job_list_search_matches_an_id_or_an_idempotency_key_exactly(driver):
    keyed = enqueue(driver, idempotency_key="invoice-42")
    enqueue(driver, idempotency_key="invoice-420")
    plain = enqueue(driver)
    assert ids(driver.job_list(search="invoice-42")) == [keyed]
    assert ids(driver.job_list(search=str(plain))) == [plain]
    assert ids(driver.job_list(search=f"  {plain}  ")) == [plain]
    assert ids(driver.job_list(search="invoice")) == []
    assert ids(driver.job_list(search=str(uuid.uuid4()))) == []
    # A key that looks like a job id still matches as a key.
    looks_like_id = str(uuid.uuid4())
    by_key = enqueue(driver, idempotency_key=looks_like_id)
    assert ids(driver.job_list(search=looks_like_id)) == [by_key]


def test_job_list_rows_summarise_the_job(driver):
    job_id = enqueue(driver, priority=5, idempotency_key="k-1", tenant_id="acme", max_attempts=2)
    for action in ("retry", "fail"):
        job = claim_one(driver)
        error = attempt_error(job.attempt, message=f"failure {job.attempt}")
        assert driver.job_nack(
            job_id=job.id, claim_token=job.claim_token, action=action, error=error
        )
    record = get(driver, job_id)
    (row,) = driver.job_list().jobs
    assert (row.id, row.name, row.queue, row.state, row.priority) == (
        job_id,
        "tests.echo",
        "default",
        JobState.FAILED,
        5,
    )
    assert (row.idempotency_key, row.tenant_id, row.attempt, row.max_attempts) == (
        "k-1",
        "acme",
        2,
        2,
    )
    assert (row.error_count, row.last_error_class, row.last_error_message) == (
        2,
        "builtins.ValueError",
        "failure 2",
    )
    assert (row.run_at, row.created_at, row.started_at, row.finished_at) == (
        record.run_at,
        record.created_at,
        record.started_at,
        record.finished_at,
    )
    assert row.worker_id == record.worker_id


def test_job_list_row_without_errors(driver):
    job_id = in_state(driver, "completed")
    (row,) = driver.job_list().jobs
    assert (row.id, row.error_count, row.last_error_class, row.last_error_message) == (
        job_id,
        0,
        None,
        None,
    )


# -- queue_stats ----------------------------------------------------------------------------


def stats_by_key(stats: list[QueueStats]) -> dict[tuple[str, str], QueueStats]:
    return {(stat.queue, stat.state.value): stat for stat in stats}


def test_queue_stats_empty_store(driver):
    assert driver.queue_stats() == []


def test_queue_stats_counts_every_state_per_queue(driver, store):
    running = in_state(driver, "running")
    in_state(driver, "completed")
    in_state(driver, "completed")
    in_state(driver, "failed")
    in_state(driver, "cancelled")
    due = enqueue(driver)
    store.make_due(due)
    later = enqueue(driver)
    store.make_future(later, 600)
    enqueue(driver, queue="math", name="tests.add")
    assert running

    stats = driver.queue_stats()
    assert [(s.queue, s.state.value, s.jobs, s.exact) for s in stats] == [
        ("default", "cancelled", 1, True),
        ("default", "completed", 2, True),
        ("default", "failed", 1, True),
        ("default", "queued", 2, True),
        ("default", "running", 1, True),
        ("math", "queued", 1, True),
    ]
    by_key = stats_by_key(stats)
    # The oldest due job of default was made due an hour ago; the future one does not count.
    assert by_key[("default", "queued")].oldest_ready_seconds == pytest.approx(3600, abs=60)
    assert by_key[("math", "queued")].oldest_ready_seconds == pytest.approx(0, abs=30)
    for key in [("default", "running"), ("default", "failed"), ("default", "completed")]:
        assert by_key[key].oldest_ready_seconds is None


def test_queue_stats_queue_with_only_future_jobs_has_no_ready_age(driver, store):
    job_id = enqueue(driver)
    store.make_future(job_id, 600)
    (stat,) = driver.queue_stats()
    assert (stat.queue, stat.state, stat.jobs, stat.oldest_ready_seconds) == (
        "default",
        JobState.QUEUED,
        1,
        None,
    )


def test_queue_stats_counts_a_paused_queue(driver):
    enqueue(driver, queue="emails")
    driver.queue_pause(queue="emails")
    assert [(s.queue, s.jobs) for s in driver.queue_stats()] == [("emails", 1)]


def test_queue_stats_ready_counts_the_due_queued_jobs_zero_when_paused(driver, store):
    """``ready`` is the demand of a queue with or without a worker: its due queued jobs."""
    in_state(driver, "running")
    for _ in range(2):
        store.make_due(enqueue(driver))
    store.make_future(enqueue(driver), 600)
    enqueue(driver, queue="emails")
    by_key = stats_by_key(driver.queue_stats())
    assert by_key[("default", "queued")].ready == 2
    assert by_key[("default", "queued")].jobs == 3
    assert by_key[("default", "running")].ready == 0
    assert by_key[("emails", "queued")].ready == 1
    driver.queue_pause(queue="emails")
    by_key = stats_by_key(driver.queue_stats())
    assert (by_key[("emails", "queued")].jobs, by_key[("emails", "queued")].ready) == (1, 0)
    assert by_key[("default", "queued")].ready == 2


def test_queue_stats_counts_finished_states_up_to_the_limit_per_name(driver):
    for _ in range(3):
        in_state(driver, "completed")
    in_state(driver, "completed", name="tests.add", queue="math")
    for _ in range(3):
        enqueue(driver, queue="math", name="tests.add")
    by_key = stats_by_key(driver.queue_stats(limit=2))
    completed = by_key[("default", "completed")]
    assert (completed.jobs, completed.exact) == (2, False)
    other = by_key[("math", "completed")]
    assert (other.jobs, other.exact) == (1, True)
    # Live states are exact whatever the limit.
    queued = by_key[("math", "queued")]
    assert (queued.jobs, queued.exact) == (3, True)


def test_queue_stats_refuses_a_limit_below_one(driver):
    with pytest.raises(ValueError):
        driver.queue_stats(limit=0)


# -- counters -------------------------------------------------------------------------------


def test_counter_read_answers_the_buckets_from_since(driver):
    in_state(driver, "completed")
    in_state(driver, "completed")
    in_state(driver, "cancelled")
    in_state(driver, "running", name="tests.add", queue="math")
    rows = driver.counter_read(since=utcnow() - HOUR)
    assert [(row.name, row.period, row.completed, row.cancelled) for row in rows] == [
        ("tests.echo", "minute", 2, 1)
    ]
    (row,) = rows
    assert row.bucket.second == 0 and row.bucket.microsecond == 0
    assert row.counts() == {
        "completed": 2,
        "retried": 0,
        "dead": 0,
        "dropped": 0,
        "refused": 0,
        "cancelled": 1,
    }
    # The bucket holding since is included; a later since finds nothing.
    assert driver.counter_read(since=row.bucket + timedelta(seconds=59)) == rows
    assert driver.counter_read(since=row.bucket + timedelta(minutes=1)) == []


def test_counter_read_orders_by_bucket_then_name_and_keeps_periods_apart(driver):
    start = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    add_counter(driver, "b.job", "minute", start, completed=1)
    add_counter(driver, "a.job", "minute", start + timedelta(minutes=1), dead=2)
    add_counter(driver, "a.job", "minute", start, retried=3)
    add_counter(driver, "a.job", "hour", start, completed=60)
    add_counter(driver, "a.job", "minute", start - timedelta(minutes=1), completed=9)
    rows = driver.counter_read(since=start + timedelta(seconds=30))
    assert [(row.name, row.bucket) for row in rows] == [
        ("a.job", start),
        ("b.job", start),
        ("a.job", start + timedelta(minutes=1)),
    ]
    hours = driver.counter_read(since=start + timedelta(minutes=30), period="hour")
    assert [(row.name, row.period, row.completed) for row in hours] == [("a.job", "hour", 60)]


def test_counter_read_refuses_an_unknown_period(driver):
    with pytest.raises(ValueError):
        driver.counter_read(since=utcnow(), period="day")


def test_counter_total_sums_every_bucket_of_both_periods(driver):
    assert driver.counter_total() == []
    start = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    add_counter(driver, "z.job", "minute", start, completed=1, dead=1)
    add_counter(driver, "z.job", "minute", start + timedelta(minutes=1), completed=2)
    add_counter(driver, "z.job", "hour", start - HOUR, completed=100, refused=4)
    job_id = enqueue(driver)
    job = claim_one(driver)
    assert ack(driver, job_id, job.claim_token)
    in_state(driver, "cancelled")
    assert driver.counter_total() == [
        CounterTotal(name="tests.echo", completed=1, cancelled=1),
        CounterTotal(name="z.job", completed=103, dead=1, refused=4),
    ]
