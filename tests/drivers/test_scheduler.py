"""The scheduler's store methods, on both drivers: the leader lease (``leader_attempt_elect``,
``leader_resign``), cron state (``scheduler_cron_sync``) and the fenced fire
(``scheduler_fire``)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from tests.drivers.support import HOUR, RedisControls, claim_one, enqueue, get, utcnow
from ultimat3_jobs.model.cron import idempotency_key
from ultimat3_jobs.model.options import EnqueueOptions
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.model.requests import build_request
from ultimat3_jobs.types import JobState

LEADER = "scheduler"
CRON = "tests.every_second"
TTL = 30.0


# -- store controls ---------------------------------------------------------------------------


def expire_leader(driver, name=LEADER):
    """Move the lease's ``expires_at`` an hour into the past, holder and epoch unchanged."""
    if driver.name == "postgres":
        from ultimat3_jobs.models import SchedulerLeader

        moved = SchedulerLeader.objects.filter(name=name).update(expires_at=utcnow() - HOUR)
        assert moved == 1
        return
    if driver.name == "redis":
        RedisControls(driver).expire_leader(name)
        return
    # The memory driver offers no test-support method for its leases: its private dict
    # ``_leaders`` (name -> (holder, epoch, expires_at)) is the table, so the test edits it
    # directly, under the driver's lock.
    with driver._lock:
        holder, epoch, _ = driver._leaders[name]
        driver._leaders[name] = (holder, epoch, utcnow() - HOUR)


def leader_row(driver, name=LEADER):
    """(holder, epoch) as stored."""
    if driver.name == "postgres":
        from ultimat3_jobs.models import SchedulerLeader

        row = SchedulerLeader.objects.get(name=name)
        return row.holder, row.epoch
    if driver.name == "redis":
        return RedisControls(driver).leader_row(name)
    holder, epoch, _ = driver._leaders[name]  # memory: see expire_leader
    return holder, epoch


def job_count(driver):
    if driver.name == "postgres":
        from ultimat3_jobs.models import Job

        return Job.objects.count()
    if driver.name == "redis":
        return RedisControls(driver).row_count()
    return len(driver._rows)  # memory: its row dict is the table


# -- helpers ----------------------------------------------------------------------------------


def elect(driver, holder, ttl=TTL):
    return driver.leader_attempt_elect(name=LEADER, holder=holder, ttl_seconds=ttl)


def occurrence_after(watermark, seconds=1):
    """A whole-second occurrence after ``watermark``, as a per-second cron would have."""
    return watermark.replace(microsecond=0) + timedelta(seconds=seconds)


def fire(driver, *, old, occurrence, holder="a", epoch=1, dispatch=True, cron=CRON):
    definition = registry.get(cron).definition
    request = build_request(
        definition, {}, EnqueueOptions(idempotency_key=idempotency_key(cron, occurrence))
    )
    result = driver.scheduler_fire(
        cron=cron,
        old_watermark=old,
        occurrence=occurrence,
        dispatch=dispatch,
        request=request,
        leader=LEADER,
        holder=holder,
        epoch=epoch,
    )
    return result, request


def sync_one(driver, name=CRON):
    states = driver.scheduler_cron_sync(names=[name])
    assert set(states) == {name}
    return states[name]


def close_to_now(when: datetime, seconds: float = 5.0) -> bool:
    return abs((when - utcnow()).total_seconds()) <= seconds


# -- the leader lease -------------------------------------------------------------------------


def test_elect_a_free_lease_answers_epoch_1(driver):
    lease = elect(driver, "a")
    assert lease is not None
    assert lease.epoch == 1
    assert close_to_now(lease.store_now)
    assert abs((lease.expires_at - lease.store_now).total_seconds() - TTL) < 1
    assert leader_row(driver) == ("a", 1)


def test_renew_by_the_holder_keeps_the_epoch_and_extends(driver):
    first = elect(driver, "a", ttl=10)
    second = elect(driver, "a", ttl=TTL)
    assert first is not None and second is not None
    assert second.epoch == first.epoch == 1
    assert second.expires_at > first.expires_at
    assert leader_row(driver) == ("a", 1)


def test_another_holder_is_refused_while_the_lease_is_live(driver):
    assert elect(driver, "a") is not None
    assert elect(driver, "b") is None
    assert elect(driver, "b") is None
    assert leader_row(driver) == ("a", 1)


def test_another_holder_takes_an_expired_lease_with_the_next_epoch(driver):
    assert elect(driver, "a").epoch == 1
    expire_leader(driver)
    taken = elect(driver, "b")
    assert taken is not None
    assert taken.epoch == 2
    assert leader_row(driver) == ("b", 2)
    # The old holder is now the one refused, and the new one renews at its own epoch.
    assert elect(driver, "a") is None
    assert elect(driver, "b").epoch == 2


def test_the_holder_renews_its_own_expired_lease_at_the_same_epoch(driver):
    assert elect(driver, "a").epoch == 1
    expire_leader(driver)
    assert elect(driver, "a").epoch == 1


def test_resign_lets_another_holder_take_it_at_once(driver):
    assert elect(driver, "a").epoch == 1
    assert driver.leader_resign(name=LEADER, holder="a") is True
    taken = elect(driver, "b")
    assert taken is not None and taken.epoch == 2
    assert leader_row(driver) == ("b", 2)


def test_resign_by_a_non_holder_changes_nothing(driver):
    assert driver.leader_resign(name=LEADER, holder="a") is False  # no lease at all
    assert elect(driver, "a").epoch == 1
    assert driver.leader_resign(name=LEADER, holder="b") is False
    assert elect(driver, "b") is None
    assert leader_row(driver) == ("a", 1)


def test_leases_of_different_names_are_independent(driver):
    assert driver.leader_attempt_elect(name="one", holder="a", ttl_seconds=TTL).epoch == 1
    assert driver.leader_attempt_elect(name="two", holder="b", ttl_seconds=TTL).epoch == 1
    assert driver.leader_attempt_elect(name="one", holder="b", ttl_seconds=TTL) is None


# -- cron state -------------------------------------------------------------------------------


def test_sync_starts_a_new_cron_at_now(driver):
    state = sync_one(driver)
    assert state.name == CRON
    assert close_to_now(state.watermark)
    assert state.last_fire_at is None
    assert state.last_job_id is None


def test_sync_keeps_a_known_watermark(driver):
    first = sync_one(driver)
    again = driver.scheduler_cron_sync(names=[CRON, "tests.paris_daily"])
    assert again[CRON].watermark == first.watermark
    assert close_to_now(again["tests.paris_daily"].watermark)


def test_sync_answers_the_watermark_a_fire_moved(driver):
    state = sync_one(driver)
    assert elect(driver, "a").epoch == 1
    occurrence = occurrence_after(state.watermark)
    result, request = fire(driver, old=state.watermark, occurrence=occurrence)
    assert result.moved
    again = sync_one(driver)
    assert again.watermark == occurrence
    assert again.last_fire_at == occurrence
    assert again.last_job_id == request.id


def test_sync_of_no_names_answers_nothing(driver):
    assert driver.scheduler_cron_sync(names=[]) == {}


def test_cron_read_answers_known_crons_and_writes_nothing(driver):
    assert driver.scheduler_cron_read(names=[CRON]) == {}
    assert driver.scheduler_cron_read(names=[CRON]) == {}  # the first read wrote nothing
    state = sync_one(driver)
    assert elect(driver, "a").epoch == 1
    occurrence = occurrence_after(state.watermark)
    _, request = fire(driver, old=state.watermark, occurrence=occurrence)
    found = driver.scheduler_cron_read(names=[CRON, "tests.paris_daily", CRON])
    assert list(found) == [CRON]
    assert found[CRON].watermark == occurrence
    assert found[CRON].last_fire_at == occurrence
    assert found[CRON].last_job_id == request.id
    assert driver.scheduler_cron_read(names=[]) == {}


# -- the fenced fire --------------------------------------------------------------------------


def test_fire_moves_the_watermark_and_inserts_a_due_job_with_the_occurrence_key(driver):
    state = sync_one(driver)
    assert elect(driver, "a").epoch == 1
    occurrence = occurrence_after(state.watermark)
    result, request = fire(driver, old=state.watermark, occurrence=occurrence)
    assert result.moved is True
    assert result.job_id == request.id
    record = get(driver, request.id)
    assert record.name == CRON
    assert record.state is JobState.QUEUED
    assert record.idempotency_key == f"task:{int(occurrence.timestamp())}:{CRON}"
    assert record.run_at <= utcnow()
    assert close_to_now(record.created_at)
    assert sync_one(driver).watermark == occurrence


def test_the_fired_job_is_claimable_at_once(driver):
    state = sync_one(driver)
    assert elect(driver, "a").epoch == 1
    result, _ = fire(driver, old=state.watermark, occurrence=occurrence_after(state.watermark))
    claimed = claim_one(driver, ("default",))
    assert claimed.id == result.job_id


def test_a_second_fire_from_the_same_old_watermark_moves_nothing(driver):
    state = sync_one(driver)
    assert elect(driver, "a").epoch == 1
    first = occurrence_after(state.watermark)
    assert fire(driver, old=state.watermark, occurrence=first)[0].moved
    rows = job_count(driver)
    # The same occurrence again, and the next one, both from the stale watermark.
    for occurrence in (first, occurrence_after(state.watermark, 2)):
        result, _ = fire(driver, old=state.watermark, occurrence=occurrence)
        assert result.moved is False
        assert result.job_id is None
    assert job_count(driver) == rows == 1
    assert sync_one(driver).watermark == first


@pytest.mark.parametrize(
    "case", ["stale-epoch", "non-holder", "non-holder-current-epoch", "expired", "resigned"]
)
def test_a_fire_without_the_live_lease_moves_nothing(driver, case):
    state = sync_one(driver)
    assert elect(driver, "a").epoch == 1
    holder, epoch = "a", 1
    if case == "stale-epoch":
        expire_leader(driver)
        assert elect(driver, "b").epoch == 2
        # "a" fires with the epoch it led at; "b" (the holder) with the old epoch.
        for who in ("a", "b"):
            result, _ = fire(
                driver,
                old=state.watermark,
                occurrence=occurrence_after(state.watermark),
                holder=who,
            )
            assert (result.moved, result.job_id) == (False, None)
    elif case == "non-holder":
        holder = "c"
    elif case == "non-holder-current-epoch":
        expire_leader(driver)
        assert elect(driver, "b").epoch == 2
        holder, epoch = "a", 2
    elif case == "expired":
        expire_leader(driver)
    else:
        assert driver.leader_resign(name=LEADER, holder="a")
    result, _ = fire(
        driver,
        old=state.watermark,
        occurrence=occurrence_after(state.watermark),
        holder=holder,
        epoch=epoch,
    )
    assert (result.moved, result.job_id) == (False, None)
    assert job_count(driver) == 0
    assert sync_one(driver).watermark == state.watermark


def test_a_fire_with_no_lease_at_all_moves_nothing(driver):
    state = sync_one(driver)
    result, _ = fire(driver, old=state.watermark, occurrence=occurrence_after(state.watermark))
    assert (result.moved, result.job_id) == (False, None)
    assert job_count(driver) == 0


def test_a_fire_for_a_cron_never_synced_moves_nothing(driver):
    assert elect(driver, "a").epoch == 1
    now = utcnow()
    result, _ = fire(driver, old=now, occurrence=occurrence_after(now))
    assert (result.moved, result.job_id) == (False, None)
    assert job_count(driver) == 0


def test_dispatch_false_moves_the_watermark_without_a_job(driver):
    state = sync_one(driver)
    assert elect(driver, "a").epoch == 1
    skipped = occurrence_after(state.watermark)
    result, _ = fire(driver, old=state.watermark, occurrence=skipped, dispatch=False)
    assert (result.moved, result.job_id) == (True, None)
    assert job_count(driver) == 0
    after_skip = sync_one(driver)
    assert after_skip.watermark == skipped
    assert after_skip.last_fire_at is None
    assert after_skip.last_job_id is None
    # The next occurrence fires from the skipped one.
    fired = occurrence_after(state.watermark, 2)
    result, request = fire(driver, old=skipped, occurrence=fired)
    assert (result.moved, result.job_id) == (True, request.id)
    assert sync_one(driver).last_fire_at == fired


def test_fires_chain_from_watermark_to_watermark(driver):
    state = sync_one(driver)
    assert elect(driver, "a").epoch == 1
    old, keys = state.watermark, []
    for n in range(1, 4):
        occurrence = occurrence_after(state.watermark, n)
        result, request = fire(driver, old=old, occurrence=occurrence)
        assert (result.moved, result.job_id) == (True, request.id)
        keys.append(get(driver, request.id).idempotency_key)
        old = occurrence
    assert len(set(keys)) == 3
    assert job_count(driver) == 3


def test_a_fire_whose_key_is_live_moves_without_a_second_job(driver):
    """A job already live under the occurrence's key (a retried statement): the watermark
    moves, no second job is written."""
    state = sync_one(driver)
    assert elect(driver, "a").epoch == 1
    occurrence = occurrence_after(state.watermark)
    existing = enqueue(driver, name=CRON, idempotency_key=idempotency_key(CRON, occurrence))
    result, _ = fire(driver, old=state.watermark, occurrence=occurrence)
    assert (result.moved, result.job_id) == (True, None)
    assert job_count(driver) == 1
    assert get(driver, existing).idempotency_key == idempotency_key(CRON, occurrence)
    assert sync_one(driver).watermark == occurrence


def test_a_fire_whose_key_is_live_keeps_the_last_job_id_of_the_last_job_it_inserted(driver):
    """``last_job_id`` names a job the fire inserted. When a live job already holds the
    occurrence's key, no job is inserted: neither the unused id of the fire's request nor the
    other job's id is written, and the last job the scheduler fired stays named."""
    state = sync_one(driver)
    assert elect(driver, "a").epoch == 1
    first = occurrence_after(state.watermark)
    result, request = fire(driver, old=state.watermark, occurrence=first)
    assert result.job_id == request.id
    assert sync_one(driver).last_job_id == request.id

    second = occurrence_after(state.watermark, 2)
    existing = enqueue(driver, name=CRON, idempotency_key=idempotency_key(CRON, second))
    result, refused = fire(driver, old=first, occurrence=second)
    assert (result.moved, result.job_id) == (True, None)
    after = sync_one(driver)
    assert after.watermark == second
    assert after.last_job_id == request.id
    assert after.last_job_id not in (refused.id, existing)
    assert get(driver, after.last_job_id).name == CRON


def test_a_first_fire_whose_key_is_live_writes_no_last_job_id(driver):
    state = sync_one(driver)
    assert elect(driver, "a").epoch == 1
    occurrence = occurrence_after(state.watermark)
    enqueue(driver, name=CRON, idempotency_key=idempotency_key(CRON, occurrence))
    result, _ = fire(driver, old=state.watermark, occurrence=occurrence)
    assert (result.moved, result.job_id) == (True, None)
    assert sync_one(driver).last_job_id is None
