"""``job_settle_handoff`` (``drivers/leases_seam.py``): a settle that, in the same write, passes
each concurrency slot a settled run held to a next run of the same key. On every driver it
settles as ``job_settle_many`` does; a driver that hands off (PostgreSQL) passes the slot's row
to the next run, never more rows than before, and stamps the next run's start at or after the
settled run's finish; a driver that does not grants none. Fences: a next run not running under
its token, one holding a slot of its key already, one whose limit is below the slot, a settle
that does not land, a row taken over meanwhile, and a write the store refuses (nothing lands,
nothing changes hands)."""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import replace
from datetime import timedelta

import pytest
from django.db import transaction
from django.db.models import F

from tests.drivers.leases_support import expire_key, lease_rows
from tests.drivers.support import claim_one, enqueue, get
from ultimat3_jobs.drivers.base import LeaseRequest, LeaseRun
from ultimat3_jobs.drivers.job_driver import JobDriver
from ultimat3_jobs.errors import StoreRefused
from ultimat3_jobs.models import Job
from ultimat3_jobs.types import JobState, SettleItem

KEY = "job:tests.echo"


def running(driver: JobDriver):
    enqueue(driver)
    return claim_one(driver)


def holding(driver: JobDriver, limit: int = 1):
    job = running(driver)
    request = LeaseRequest(key=KEY, limit=limit)
    assert driver.lease_acquire(job_id=job.id, claim_token=job.claim_token, requests=[request])
    return job


def acked(job, result_json: str = "null") -> SettleItem:
    return SettleItem(
        job_id=job.id, claim_token=job.claim_token, action="complete", result_json=result_json
    )


def next_run(job, limit: int = 1, token: uuid.UUID | None = None) -> LeaseRun:
    return LeaseRun(
        job_id=job.id,
        claim_token=token or job.claim_token,
        requests=[LeaseRequest(key=KEY, limit=limit)],
    )


def holders(driver: JobDriver) -> list[tuple[int, uuid.UUID, uuid.UUID]]:
    return [(h.slot, h.job_id, h.claim_token) for h in driver.lease_holders(key=KEY)]


@pytest.fixture(autouse=True)
def _lease_store(driver: JobDriver) -> None:
    assert driver.has_lease_store, f"the {driver.name} driver keeps a lease store"


def test_the_settled_runs_slot_passes_to_the_next_run(driver):
    done, waiting = holding(driver), running(driver)
    answer = driver.job_settle_handoff(items=[acked(done)], runs=[next_run(waiting)])
    assert answer.landed == {done.id}
    assert get(driver, done.id).state == JobState.COMPLETED
    if not driver.hands_off_slots:
        assert answer.granted == set()
        assert holders(driver) == []  # freed as every settle frees it
        return
    assert answer.granted == {waiting.id}
    assert holders(driver) == [(0, waiting.id, waiting.claim_token)]
    assert len(lease_rows(driver)) == 1
    finished, started = get(driver, done.id).finished_at, get(driver, waiting.id).started_at
    assert finished is not None and started is not None and started >= finished
    (row,) = driver.lease_holders(key=KEY)
    assert row.expires_at == get(driver, waiting.id).lease_expires_at


def test_each_freed_slot_goes_to_one_next_run_in_order(driver):
    first, second = holding(driver, 2), holding(driver, 2)
    a, b, c = running(driver), running(driver), running(driver)
    answer = driver.job_settle_handoff(
        items=[acked(first), acked(second)], runs=[next_run(x, 2) for x in (a, b, c)]
    )
    assert answer.landed == {first.id, second.id}
    if driver.hands_off_slots:
        assert answer.granted == {a.id, b.id}
        assert [(slot, job) for slot, job, _ in holders(driver)] == [(0, a.id), (1, b.id)]
    assert get(driver, c.id).state == JobState.RUNNING  # not granted: left as it was


def test_a_fenced_next_run_takes_nothing_and_the_slot_is_freed(driver):
    done, waiting = holding(driver), running(driver)
    answer = driver.job_settle_handoff(
        items=[acked(done)], runs=[next_run(waiting, token=uuid.uuid4())]
    )
    assert (answer.landed, answer.granted) == ({done.id}, set())
    assert answer.held == ({done.id} if driver.hands_off_slots else set())
    assert holders(driver) == []


def test_a_next_run_that_holds_a_slot_of_its_key_takes_no_second_one(driver):
    done, waiting = holding(driver, 2), holding(driver, 2)
    answer = driver.job_settle_handoff(items=[acked(done)], runs=[next_run(waiting, 2)])
    assert answer.granted == set()
    assert [job for _, job, _ in holders(driver)] == [waiting.id]


def test_a_slot_at_or_above_the_next_runs_limit_is_not_passed(driver):
    keeps, done = holding(driver, 2), holding(driver, 2)  # done holds slot 1
    waiting = running(driver)
    answer = driver.job_settle_handoff(items=[acked(done)], runs=[next_run(waiting, 1)])
    assert answer.granted == set()
    assert [job for _, job, _ in holders(driver)] == [keeps.id]


def test_a_settle_that_does_not_land_hands_nothing_off(driver):
    done, waiting = holding(driver), running(driver)
    stale = SettleItem(job_id=done.id, claim_token=uuid.uuid4(), action="complete")
    answer = driver.job_settle_handoff(items=[stale], runs=[next_run(waiting)])
    assert answer.landed == set() and answer.granted == set()
    assert holders(driver) == [(0, done.id, done.claim_token)]


def test_a_slot_taken_over_meanwhile_stays_with_its_new_holder(driver):
    done = holding(driver)
    expire_key(driver, KEY)  # the settled run's lease ran out, not yet rescued
    thief, waiting = running(driver), running(driver)
    request = LeaseRequest(key=KEY, limit=1)
    assert driver.lease_acquire(job_id=thief.id, claim_token=thief.claim_token, requests=[request])
    answer = driver.job_settle_handoff(items=[acked(done)], runs=[next_run(waiting)])
    assert answer.landed == {done.id} and answer.granted == set()
    assert holders(driver) == [(0, thief.id, thief.claim_token)]


def test_a_refused_write_lands_nothing_and_hands_nothing_off(driver):
    done, waiting = holding(driver), running(driver)
    before = get(driver, waiting.id).started_at
    savepoint = transaction.atomic() if driver.name == "postgres" else contextlib.nullcontext()
    with pytest.raises(StoreRefused), savepoint:
        driver.job_settle_handoff(items=[acked(done, "{not json")], runs=[next_run(waiting)])
    assert get(driver, done.id).state == JobState.RUNNING
    assert holders(driver) == [(0, done.id, done.claim_token)]
    assert get(driver, waiting.id).started_at == before


def test_a_batch_with_a_nack_hands_its_slots_on_as_acks_do(driver):
    done, waiting = holding(driver), running(driver)
    retried = SettleItem(job_id=done.id, claim_token=done.claim_token, action="retry")
    answer = driver.job_settle_handoff(items=[retried], runs=[next_run(waiting)])
    assert answer.landed == {done.id}
    assert get(driver, done.id).state == JobState.QUEUED
    if not driver.hands_off_slots:
        assert answer.granted == set()
        assert holders(driver) == []
        return
    assert answer.granted == {waiting.id}
    assert holders(driver) == [(0, waiting.id, waiting.claim_token)]
    assert len(lease_rows(driver)) == 1


def test_a_relayed_next_run_is_stamped_by_its_own_settle_not_by_the_hand_off(driver):
    if not driver.hands_off_slots:
        pytest.skip("only a driver that hands slots on relays a run")
    done, rider = holding(driver), running(driver)
    claimed = get(driver, rider.id).started_at
    relayed = replace(next_run(rider), relayed=True)
    answer = driver.job_settle_handoff(items=[acked(done)], runs=[relayed])
    assert answer.granted == {rider.id}
    assert holders(driver) == [(0, rider.id, rider.claim_token)]
    assert get(driver, rider.id).started_at == claimed  # the hand-off wrote no stamp
    item = replace(acked(rider), relayed=True)
    assert driver.job_settle_handoff(items=[item], runs=[]).landed == {rider.id}
    row, owner = get(driver, rider.id), get(driver, done.id)
    assert row.started_at is not None and row.started_at == row.finished_at
    assert owner.finished_at is not None and row.started_at >= owner.finished_at
    assert holders(driver) == []


@pytest.mark.parametrize("action", ["complete", "fail"])
def test_a_relayed_run_is_stamped_started_at_its_settle(driver, action):
    if not driver.hands_off_slots:
        pytest.skip("only a driver that hands slots on relays a run")
    job, other = running(driver), running(driver)
    earlier = Job.objects.filter(id__in=[job.id, other.id])
    earlier.update(started_at=F("started_at") - timedelta(hours=1))  # claimed an hour ago
    item = replace(acked(job), action=action, relayed=True)
    assert driver.job_settle_many(items=[item, acked(other)]) == {job.id, other.id}
    row, kept = get(driver, job.id), get(driver, other.id)
    assert row.started_at is not None and row.started_at == row.finished_at
    assert kept.started_at is not None and kept.finished_at is not None
    assert (kept.finished_at - kept.started_at).total_seconds() >= 3600


def test_the_answer_names_the_settled_runs_whose_rows_were_there(driver):
    if not driver.hands_off_slots:
        pytest.skip("only a driver that hands slots on answers which rows it found")
    kept, released, free = holding(driver, 3), holding(driver, 3), running(driver)
    assert driver.lease_release(key=KEY) == 2 and lease_rows(driver) == []
    assert driver.lease_acquire(
        job_id=kept.id, claim_token=kept.claim_token, requests=[LeaseRequest(key=KEY, limit=3)]
    ).granted
    answer = driver.job_settle_handoff(items=[acked(x) for x in (kept, released, free)], runs=[])
    assert answer.landed == {kept.id, released.id, free.id}
    assert (answer.granted, answer.held) == (set(), {kept.id})
    assert holders(driver) == []


@pytest.mark.parametrize("action", ["complete", "fail"])
@pytest.mark.parametrize("handoff", [True, False], ids=["handoff", "many"])
def test_a_lent_run_ends_only_while_the_row_it_rode_is_there(driver, action, handoff):
    if not driver.hands_off_slots:
        pytest.skip("only a driver that hands slots on relays a run")
    owner, rider = holding(driver), running(driver)
    item = replace(acked(rider), action=action, relayed=True, lent_by=owner.id)
    write = driver.job_settle_handoff if handoff else driver.job_settle_many
    assert driver.lease_release(key=KEY) == 1  # an operator freed the key: the row went
    answer = write(items=[item], runs=[]) if handoff else write(items=[item])
    assert (answer.landed if handoff else answer) == set()
    assert get(driver, rider.id).state == JobState.RUNNING  # left to the rescuer
    again = holding(driver)  # a row naming ``again``: the rider's fence names ``owner``
    assert driver.job_settle_many(items=[item]) == set()
    assert driver.job_settle_many(items=[replace(item, lent_by=again.id)]) == {rider.id}
    assert get(driver, rider.id).state == ("completed" if action == "complete" else "failed")
