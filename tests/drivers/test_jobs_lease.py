"""job_heartbeat_many and job_rescue_expired: keeping a lease (and storing progress with it), and
taking back a lost one."""

from __future__ import annotations

import uuid

import pytest

from tests.drivers.support import (
    LEASE,
    about,
    ack,
    claim,
    claim_ids,
    claim_one,
    counters,
    enqueue,
    get,
    rescue,
    seconds_between,
    state_of,
    utcnow,
)
from ultimat3_jobs.types import ExpiredAttempt, FailureDecision, Heartbeat, JobState, RescuedJob

LEASE_EXPIRED = "ultimat3_jobs.LeaseExpired"


def _running(driver, **overrides):
    job_id = enqueue(driver, **overrides)
    job = claim_one(driver, worker_id="w-lease")
    assert job.id == job_id
    return job


def _expired(driver, store, count=1, **overrides):
    jobs = [_running(driver, **overrides) for _ in range(count)]
    for job in jobs:
        store.expire_lease(job.id)
    return jobs


def _beat(driver, attempts, lease_seconds=60, **kwargs):
    return driver.job_heartbeat_many(attempts=attempts, lease_seconds=lease_seconds, **kwargs)


def test_job_heartbeat_many_extends_lease(driver):
    job = _running(driver)
    leased = get(driver, job.id).lease_expires_at
    assert _beat(driver, [(job.id, job.claim_token)], 600) == Heartbeat(renewed={job.id})
    record = get(driver, job.id)
    assert about(600 - LEASE, seconds_between(record.lease_expires_at, leased))
    assert (record.state, record.attempt) == (JobState.RUNNING, 1)


def test_job_heartbeat_many_job_lease_seconds_overrides(driver):
    job = _running(driver, lease_seconds=900)
    leased = get(driver, job.id).lease_expires_at
    assert _beat(driver, [(job.id, job.claim_token)], 5).renewed == {job.id}
    record = get(driver, job.id)
    assert about(900, seconds_between(record.lease_expires_at, record.started_at))
    assert seconds_between(record.lease_expires_at, leased) >= 0


def test_job_heartbeat_many_answers_only_landed_ids(driver):
    kept, cancelled, wrong = (_running(driver) for _ in range(3))
    assert driver.job_cancel(job_id=cancelled.id)
    attempts = [
        (kept.id, kept.claim_token),
        (cancelled.id, cancelled.claim_token),
        (wrong.id, uuid.uuid4()),
        (uuid.uuid4(), kept.claim_token),
    ]
    beat = _beat(driver, attempts)
    assert (beat.renewed, beat.busy, beat.held) == ({kept.id}, set(), {kept.id})


def test_job_heartbeat_many_empty_lands_nothing(driver):
    assert _beat(driver, []) == Heartbeat()


def test_job_heartbeat_many_stores_progress_given(driver):
    first, second, lost = (_running(driver) for _ in range(3))
    assert driver.job_progress(
        job_id=second.id, claim_token=second.claim_token, progress_json='{"kept":1}'
    )
    assert driver.job_cancel(job_id=lost.id)
    attempts = [(job.id, job.claim_token) for job in (first, second, lost)]
    progress = {first.id: '{"current":3,"total":9}', lost.id: '{"current":1}'}
    beat = _beat(driver, attempts, progress=progress)
    assert beat == Heartbeat(renewed={first.id, second.id})
    assert get(driver, first.id).progress == {"current": 3, "total": 9}
    assert get(driver, second.id).progress == {"kept": 1}  # none given: the stored one stays
    assert get(driver, lost.id).progress is None  # fenced: a lost attempt's progress is not kept
    assert _beat(driver, attempts[:1], progress={first.id: "[4]"}).renewed == {first.id}
    assert get(driver, first.id).progress == [4]


def test_job_heartbeat_many_progress_of_a_stale_attempt_does_not_land(driver, store):
    [job] = _expired(driver, store)
    assert [rescued.id for rescued in rescue(driver)] == [job.id]
    store.make_due(job.id)
    again = claim_one(driver, worker_id="w-second")
    beat = _beat(driver, [(job.id, job.claim_token)], progress={job.id: '"stale"'})
    assert beat == Heartbeat()
    assert get(driver, job.id).progress is None
    assert _beat(driver, [(job.id, again.claim_token)], progress={job.id: '"fresh"'}).renewed
    assert get(driver, job.id).progress == "fresh"


def test_job_heartbeat_many_after_expiry_keeps_job_from_rescue(driver, store):
    [job] = _expired(driver, store)
    assert _beat(driver, [(job.id, job.claim_token)]).renewed == {job.id}
    assert rescue(driver) == []
    record = get(driver, job.id)
    assert (record.state, record.errors) == (JobState.RUNNING, [])
    assert ack(driver, job.id, job.claim_token)


def test_job_rescue_expired_requeues_with_error_entry(driver, store):
    [job] = _expired(driver, store)
    assert rescue(driver) == [RescuedJob(id=job.id, name="tests.echo", action="retry", attempt=1)]
    record = get(driver, job.id)
    assert (record.state, record.attempt, record.lease_expires_at) == (JobState.QUEUED, 1, None)
    assert record.finished_at is None
    [entry] = record.errors
    assert (entry["attempt"], entry["error_class"], entry["worker_id"]) == (
        1,
        LEASE_EXPIRED,
        "w-lease",
    )
    assert entry["traceback"] == ""
    assert isinstance(entry["message"], str) and entry["message"]
    assert isinstance(entry["at"], str) and entry["at"]
    again = claim_one(driver)
    assert (again.id, again.attempt) == (job.id, 2)


def test_job_rescue_expired_spent_attempts_fail(driver, store):
    [job] = _expired(driver, store, max_attempts=1)
    assert rescue(driver) == [RescuedJob(id=job.id, name="tests.echo", action="fail", attempt=1)]
    record = get(driver, job.id)
    assert (record.state, record.lease_expires_at) == (JobState.FAILED, None)
    assert record.finished_at is not None
    assert [entry["error_class"] for entry in record.errors] == [LEASE_EXPIRED]
    assert claim_ids(driver) == []


def test_job_rescue_expired_leaves_unexpired_running(driver, store):
    [stale] = _expired(driver, store)
    fresh = _running(driver)
    before = get(driver, fresh.id)
    assert [rescued.id for rescued in rescue(driver)] == [stale.id]
    assert get(driver, fresh.id) == before
    assert ack(driver, fresh.id, fresh.claim_token)


def test_job_rescue_expired_leaves_job_acked_first(driver, store):
    [job] = _expired(driver, store)
    assert ack(driver, job.id, job.claim_token, '"late but landed"')
    assert rescue(driver) == []
    record = get(driver, job.id)
    assert (record.state, record.result, record.errors) == (
        JobState.COMPLETED,
        "late but landed",
        [],
    )


@pytest.mark.parametrize("state", ["queued", "cancelled"])
def test_job_rescue_expired_ignores_jobs_not_running(driver, store, state):
    [job] = _expired(driver, store)
    if state == "cancelled":
        assert driver.job_cancel(job_id=job.id)
    else:
        assert driver.job_nack(job_id=job.id, claim_token=job.claim_token, action="retry")
    before = get(driver, job.id)
    assert rescue(driver) == []
    assert get(driver, job.id) == before


def test_job_rescue_expired_respects_limit(driver, store):
    jobs = _expired(driver, store, count=3)
    first = rescue(driver, limit=2)
    second = rescue(driver, limit=2)
    assert (len(first), len(second)) == (2, 1)
    assert {r.id for r in first} | {r.id for r in second} == {job.id for job in jobs}
    assert rescue(driver, limit=2) == []
    assert [state_of(driver, job.id) for job in jobs] == [JobState.QUEUED] * 3


@pytest.mark.parametrize(
    ("max_attempts", "expected"),
    [(3, counters(retried=1)), (1, counters(dead=1))],
    ids=["requeued", "failed"],
)
def test_job_rescue_expired_moves_counters(driver, store, max_attempts, expected):
    _expired(driver, store, max_attempts=max_attempts)
    assert len(rescue(driver)) == 1
    assert store.counters("tests.echo") == expected
    assert rescue(driver) == []
    assert store.counters("tests.echo") == expected


def test_job_rescue_expired_then_claims_all_again(driver, store):
    jobs = _expired(driver, store, count=2)
    assert len(rescue(driver)) == 2
    again = claim(driver, limit=5)
    assert sorted(job.id for job in again) == sorted(job.id for job in jobs)
    assert {job.attempt for job in again} == {2}


def test_job_rescue_expired_hands_the_policy_what_it_needs(driver, store):
    [job] = _expired(driver, store, max_attempts=4)
    seen: list[ExpiredAttempt] = []
    rescue(driver, seen=seen)
    assert seen == [
        ExpiredAttempt(
            id=job.id,
            claim_token=job.claim_token,
            name="tests.echo",
            attempt=1,
            max_attempts=4,
            started=True,
        )
    ]


def test_job_rescue_expired_drop_deletes_and_counts_dropped(driver, store):
    [job] = _expired(driver, store, max_attempts=1)
    assert rescue(driver, dead_letter=False) == [
        RescuedJob(id=job.id, name="tests.echo", action="drop", attempt=1)
    ]
    assert driver.job_get(job_id=job.id) is None
    assert store.counters("tests.echo") == counters(dropped=1)
    assert rescue(driver) == []


def test_job_rescue_expired_retry_waits_the_given_delay(driver, store):
    [job] = _expired(driver, store)
    assert [r.action for r in rescue(driver, delay_seconds=120)] == ["retry"]
    record = get(driver, job.id)
    assert record.state == JobState.QUEUED
    assert about(120, seconds_between(record.run_at, utcnow()))
    assert claim_ids(driver) == []
    store.make_due(job.id)
    assert claim_ids(driver) == [job.id]


def test_job_rescue_expired_applies_each_decision_as_given(driver, store):
    retried, failed, dropped = _expired(driver, store, count=3)
    actions = {retried.id: "retry", failed.id: "fail", dropped.id: "drop"}

    def decide(expired: ExpiredAttempt) -> FailureDecision:
        return FailureDecision(action=actions[expired.id], delay_seconds=60)

    rescued = driver.job_rescue_expired(decide=decide)
    assert sorted((r.id, r.action) for r in rescued) == sorted(actions.items())
    assert state_of(driver, retried.id) == JobState.QUEUED
    assert (state_of(driver, failed.id), get(driver, failed.id).finished_at is not None) == (
        JobState.FAILED,
        True,
    )
    assert state_of(driver, dropped.id) is None
    assert store.counters("tests.echo") == counters(retried=1, dead=1, dropped=1)


def test_job_rescue_expired_gives_back_an_attempt_whose_body_never_started(driver, store):
    job = _running(driver, max_attempts=1)
    assert driver.job_mark_pending_many(attempts=[(job.id, job.claim_token)], pending=True) == {
        job.id
    }
    store.expire_lease(job.id)
    seen: list[ExpiredAttempt] = []
    assert rescue(driver, seen=seen) == [
        RescuedJob(id=job.id, name="tests.echo", action="retry", attempt=0)
    ]
    assert [s.started for s in seen] == [False]
    record = get(driver, job.id)
    assert (record.state, record.attempt, record.errors) == (JobState.QUEUED, 0, [])
    assert store.counters("tests.echo") == counters()
    # Its one attempt is still there; the next claim's body counts again (the claim resets the
    # mark), so a lost worker now spends it.
    again = claim_one(driver)
    assert (again.id, again.attempt) == (job.id, 1)
    store.expire_lease(job.id)
    assert rescue(driver, dead_letter=False) == [
        RescuedJob(id=job.id, name="tests.echo", action="drop", attempt=1)
    ]


def test_job_mark_pending_many_is_fenced_and_cleared(driver, store):
    marked, cleared, other = (_running(driver) for _ in range(3))
    assert driver.job_mark_pending_many(
        attempts=[
            (marked.id, marked.claim_token),
            (cleared.id, cleared.claim_token),
            (other.id, uuid.uuid4()),
        ],
        pending=True,
    ) == {marked.id, cleared.id}
    assert driver.job_mark_pending_many(
        attempts=[(cleared.id, cleared.claim_token)], pending=False
    ) == {cleared.id}
    assert driver.job_mark_pending_many(attempts=[], pending=True) == set()
    for job in (marked, cleared, other):
        store.expire_lease(job.id)
    seen: list[ExpiredAttempt] = []
    rescue(driver, seen=seen)
    assert {s.id: s.started for s in seen} == {marked.id: False, cleared.id: True, other.id: True}
    assert {job.id: get(driver, job.id).attempt for job in (marked, cleared, other)} == {
        marked.id: 0,
        cleared.id: 1,
        other.id: 1,
    }


def test_job_rescue_expired_leaves_a_job_settled_while_the_policy_decides(driver, store):
    [job] = _expired(driver, store)

    def decide(expired: ExpiredAttempt) -> FailureDecision:
        assert ack(driver, expired.id, expired.claim_token, '"won the race"')
        return FailureDecision(action="fail")

    assert driver.job_rescue_expired(decide=decide) == []
    record = get(driver, job.id)
    assert (record.state, record.result, record.errors) == (
        JobState.COMPLETED,
        "won the race",
        [],
    )
    assert store.counters("tests.echo") == counters(completed=1)
