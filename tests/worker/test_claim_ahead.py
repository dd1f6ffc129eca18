"""Claim-ahead: the next batch is claimed while the current one runs, never more than the free
slots plus one batch; what waits keeps its lease, and goes back at once when the worker stops."""

from __future__ import annotations

from tests.testapp import jobs
from tests.worker.conftest import wait_for
from ultimat3_jobs.conf import WORKER_CONCURRENCY_DEFAULT
from ultimat3_jobs.models import Job
from ultimat3_jobs.runtime.worker.ahead import AHEAD_HORIZON_SECONDS, BATCH_MIN, ClaimAhead


def test_nothing_is_claimed_ahead_before_a_body_ended() -> None:
    ahead = ClaimAhead(8)
    assert ahead.target() == 0
    assert ahead.wanted(free=8) == 8
    assert ahead.wanted(free=0) == 0


def test_short_bodies_claim_one_batch_ahead_at_most() -> None:
    ahead = ClaimAhead(64)
    ahead.body_took(0.0001)
    assert ahead.batch == 64
    assert ahead.wanted(free=64) == 64 + 64  # the free slots plus one batch
    assert ahead.wanted(free=0) == 64


def test_the_default_worker_claims_a_batch_of_its_own_size_or_more() -> None:
    """The worker as a user starts it (``WORKER_CONCURRENCY`` 10): with short bodies its
    claims take at least ``BATCH_MIN`` jobs ahead, so its drain is bound by round trips, not by
    its ten slots (the benchmark measures how close it comes to more slots)."""
    ahead = ClaimAhead(WORKER_CONCURRENCY_DEFAULT)
    assert ahead.batch == BATCH_MIN > WORKER_CONCURRENCY_DEFAULT
    assert ahead.settle_backlog == 2 * BATCH_MIN
    ahead.body_took(0.0001)
    assert ahead.wanted(free=WORKER_CONCURRENCY_DEFAULT) == WORKER_CONCURRENCY_DEFAULT + BATCH_MIN


def test_long_bodies_claim_nothing_ahead() -> None:
    ahead = ClaimAhead(8)
    ahead.body_took(AHEAD_HORIZON_SECONDS * 8)
    assert ahead.target() == 1
    ahead.body_took(60.0)
    assert ahead.target() == 0
    assert ahead.wanted(free=3) == 3


def test_a_claim_waits_until_half_the_target_started() -> None:
    ahead = ClaimAhead(4)
    ahead.body_took(AHEAD_HORIZON_SECONDS * 4 / 6)  # a target of six
    assert ahead.target() == 6
    ahead.add([object()] * 3)  # type: ignore[list-item]
    assert ahead.wanted(free=0) == 0
    ahead.take()
    assert ahead.wanted(free=0) == 4


def _jobs(ids):
    return {row.id: row for row in Job.objects.filter(id__in=ids)}


def test_attempts_claimed_ahead_keep_their_leases_and_go_back_at_stop(make_worker) -> None:
    ids = [jobs.waits_for_cancel.enqueue(seconds=30).id for _ in range(6)]
    running = make_worker(concurrency=2, start=False, shutdown_grace=0.5)
    running.worker._ahead.body_took(0.0)  # as if bodies had proved short: a batch ahead
    running.start()
    # Two bodies run; the claim took the free slots plus up to a batch: four more wait.
    wait_for(lambda: Job.objects.filter(id__in=ids, state="running").count() == 6)
    wait_for(lambda: len(running.worker._ahead) == 4)
    waiting = [attempt.job.id for attempt in running.worker._ahead._waiting]
    leases = {job_id: _jobs(waiting)[job_id].lease_expires_at for job_id in waiting}
    wait_for(
        lambda: all(row.lease_expires_at > leases[row.id] for row in _jobs(waiting).values()),
        what="the heartbeat renewed the leases of the attempts claimed ahead",
    )
    # Waiting past the mark's threshold, they are recorded as not started (the rescue of a
    # lost worker would not count them).
    wait_for(lambda: all(row.body_pending for row in _jobs(waiting).values()))
    assert running.stop() == 0
    rows = _jobs(ids)
    assert {(row.state, row.attempt) for row in rows.values()} == {("queued", 0)}
