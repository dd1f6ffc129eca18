"""A slot lent at once: the body of a capped run ends and the worker's next run of the key
starts on its slot in memory, before the ended run's settle lands; that settle passes the row
to it (``runtime/worker/handoff.py``). The store's stamps never overlap, no row is left, and
the bookkeeping of a chain of lends frees each row once."""

from __future__ import annotations

import uuid

import pytest

from tests.limits import jobs
from tests.limits.support import concurrency_rows, finished, intervals, most_at_once
from tests.worker.conftest import wait_for
from ultimat3_jobs.models import Job
from ultimat3_jobs.runtime.worker.holdings import Holdings


@pytest.mark.django_db(transaction=True)
def test_the_next_run_starts_on_the_ended_runs_slot_before_its_settle_lands(make_worker):
    # A long flush window: the first run's settle waits for it, its slot lent meanwhile. A
    # body ended first: runs wait for a lent slot only once bodies proved short.
    make_worker(concurrency=4, ack_flush=1.0)
    warm = jobs.watcher.enqueue(key="warm").id
    wait_for(lambda: finished([warm]), timeout=30, what="a first body")
    first = jobs.watcher.enqueue(key="w").id
    second = jobs.watcher.enqueue(key="w", watch=str(first)).id
    wait_for(lambda: finished([first, second]), timeout=30, what="both runs settled")
    assert jobs.SEEN[str(first)] == "running"  # the first's settle had not landed yet
    assert set(Job.objects.filter(id__in=[first, second]).values_list("state", flat=True)) == {
        "completed"
    }
    assert most_at_once(intervals([first, second])) == 1
    spans = dict(Job.objects.filter(id__in=[first, second]).values_list("id", "finished_at"))
    assert Job.objects.get(id=second).started_at >= spans[first]
    assert concurrency_rows() == 0


@pytest.mark.django_db(transaction=True)
def test_a_slot_whose_lease_was_not_renewed_lately_is_not_lent(make_worker):
    # Leases of 4 s, renewed every 3.5 s: the first run's body (2.2 s) ends with its lease
    # last renewed more than half a lease ago, so its slot is not lent; the next run, waiting
    # in the worker, gets it from the settle, once the first run's settle landed.
    make_worker(concurrency=4, lease_seconds=4.0, heartbeat_interval=3.5)
    warm = jobs.watcher.enqueue(key="warm").id
    wait_for(lambda: finished([warm]), timeout=30, what="a first body")
    first = jobs.watcher.enqueue(key="w", sleep=2.2).id
    second = jobs.watcher.enqueue(key="w", watch=str(first)).id
    wait_for(lambda: finished([first, second]), timeout=30, what="both runs settled")
    assert jobs.SEEN[str(first)] == "completed"
    assert most_at_once(intervals([first, second])) == 1
    assert concurrency_rows() == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("operator", ["release", "cancel"])
def test_a_run_on_a_lent_slot_whose_row_went_does_not_end_as_if_it_held_it(make_worker, operator):
    # The first run's settle waits in a long flush window; the second rides its slot, and
    # its body frees the row before that settle lands, as an operator's `jobs leases release`
    # of the key or cancel of the first job would. The second body ends in the same window:
    # its ending, written with the first's, must not land as a run that held its slot (another
    # worker could have taken the row meanwhile). It is left to the rescuer, and its next
    # attempt runs on a slot of its own.
    make_worker(concurrency=4, ack_flush=1.0)
    warm = jobs.watcher.enqueue(key="warm").id
    wait_for(lambda: finished([warm]), timeout=30, what="a first body")
    first = jobs.watcher.enqueue(key="w").id
    second = jobs.watcher.enqueue(key="w", watch=str(first), operator=operator).id
    wait_for(lambda: finished([first, second]), timeout=30, what="both runs settled")
    assert jobs.SEEN[str(first)] == "running"  # it rode the first's slot, before its settle
    row = Job.objects.get(id=second)
    assert row.state == "completed"
    assert row.attempt == 2, "the run on the lent slot whose row went ended as if it held it"
    assert [entry["error_class"] for entry in row.errors] == ["ultimat3_jobs.LeaseExpired"]
    assert concurrency_rows() == 0


def _pair() -> tuple[uuid.UUID, uuid.UUID]:
    return (uuid.uuid4(), uuid.uuid4())


def test_a_chain_of_lends_frees_the_row_once_and_passes_it_along() -> None:
    holdings = Holdings()
    a, b, c = _pair(), _pair(), _pair()
    holdings.took(a, "k")
    holdings.ended(a)
    slot = holdings.lendable(a)
    assert slot is not None and holdings.lend(slot, a, b)
    assert holdings.ending == 0 and holdings.rider(a) == b
    holdings.ended(b)
    assert holdings.lend(slot, b, c)  # b rode it: the row never named b
    assert holdings.rider(a) == c and not holdings.owns(b)
    assert holdings.gone(b) is None  # its settle frees nothing
    holdings.moved(a, c)  # a's settle passed the row to c
    assert holdings.gone(a) is None and holdings.owns(c) and holdings.total == 1
    holdings.ended(c)
    assert holdings.settling("k") == 1
    assert holdings.gone(c) == "k"
    assert holdings.total == 0 and holdings.ending == 0 and holdings.freed == 1


def test_a_row_settled_before_its_rider_is_passed_frees_once_and_drops_the_rider() -> None:
    holdings = Holdings()
    a, b = _pair(), _pair()
    holdings.took(a, "k")
    holdings.ended(a)
    slot = holdings.lendable(a)
    assert slot is not None and holdings.lend(slot, a, b)
    assert holdings.gone(a) == "k"  # the settle did not pass the row: it is freed
    assert holdings.key_of(b) is None and holdings.gone(b) is None
    assert holdings.total == 0 and holdings.freed == 1


def test_a_rider_gone_before_the_owner_settles_leaves_the_slot_ended() -> None:
    holdings = Holdings()
    a, b = _pair(), _pair()
    holdings.took(a, "k")
    holdings.ended(a)
    slot = holdings.lendable(a)
    assert slot is not None and holdings.lend(slot, a, b)
    assert holdings.gone(b) is None  # lost before its body ended
    assert holdings.rider(a) is None and holdings.settling("k") == 1
    assert holdings.gone(a) == "k" and holdings.total == 0 and holdings.ending == 0
