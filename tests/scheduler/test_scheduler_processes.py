"""Three ``jobs_scheduler`` processes on a one-second task for over a minute, through a SIGKILL
of the leader, a SIGSTOP of the next leader for twice the lease, and restarts. Judged from the
rows: every second between the first and the last fire has exactly one job, failovers stay
within the lease plus two seconds, and the stalled ex-leader fires nothing once it wakes."""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from tests.scheduler.conftest import (
    EVERY_SECOND,
    Fired,
    db_now,
    fired,
    gaps_and_repeats,
    leader_row,
    task_row,
)
from tests.scheduler.processes import Schedulers
from tests.support.processes import owned

LEASE = 3.0  # SCHEDULER_LEASE_SECONDS in tests.settings_scheduler
GAP_BUDGET = LEASE + 2
GAP_SLACK = 0.25
"""The worst failover gap is the budget itself: the lost leader's last renewal just before it
went, its last fire a second before that, and a follower's attempt (one a third of the lease,
1 s) just missing the lease's end. The slack covers the statements' own time on top."""
STEADY_SECONDS = 18.0
FIRED_LINE = re.compile(r"jobs\.scheduler\.fired: (\S+) for (.+?) as ")


@pytest.fixture
def schedulers(transactional_db: None, tmp_path: Path) -> Iterator[Schedulers]:
    """Requests ``transactional_db`` so that it is torn down last: every subprocess is dead (and
    its sessions closed) before the tables are flushed."""
    yield from owned(Schedulers(tmp_path))


def live_leader():
    """The leader row while its lease is live, else ``None``."""
    row = leader_row()
    return row if row is not None and row.expires_at > db_now() else None


def failover_gap(jobs: list[Fired], at: datetime) -> float:
    """Seconds from the last occurrence fired before ``at`` to the ``created_at`` of the next
    job fired after it."""
    before = [job for job in jobs if job.created_at <= at]
    after = [job for job in jobs if job.created_at > at]
    assert before and after, f"no fire on one side of {at}"
    return (min(j.created_at for j in after) - max(j.occurrence for j in before)).total_seconds()


@pytest.mark.process
@pytest.mark.django_db(transaction=True)
def test_scheduler_processes_fire_each_second_once_through_kill_and_stall(schedulers):
    began = time.monotonic()
    for name in ("sched-a", "sched-b", "sched-c"):
        schedulers.start(name)
    schedulers.wait(live_leader, timeout=30, what="a leader")
    schedulers.wait(lambda: len(fired(EVERY_SECOND)) >= 3, timeout=15, what="the first fires")
    time.sleep(STEADY_SECONDS)

    # SIGKILL the leader; a follower takes over once its lease ends.
    victim = schedulers.get(live_leader().holder)
    killed_at = db_now()
    victim.kill()
    successor = schedulers.wait(
        lambda: (row := live_leader()) and row.holder != victim.worker_id and row,
        timeout=LEASE + 10,
        what="a leader after the kill",
    )
    restarted = schedulers.start(f"{victim.worker_id}-restarted")
    time.sleep(STEADY_SECONDS)

    # SIGSTOP the new leader for twice the lease, then let it run again.
    stalled = schedulers.get(successor.holder)
    log_at_stop = len(stalled.log())
    stopped_at = db_now()
    stalled.signal(signal.SIGSTOP)
    try:
        time.sleep(2 * LEASE)
        during = live_leader()
    finally:
        stalled.signal(signal.SIGCONT)
    assert during is not None and during.holder != stalled.worker_id, schedulers.report()
    time.sleep(STEADY_SECONDS)

    assert stalled.alive() and restarted.alive(), schedulers.report()
    last_leader = leader_row()
    for process in schedulers.started:
        process.kill()
    elapsed = time.monotonic() - began

    jobs = fired(EVERY_SECOND)
    instants = [job.occurrence for job in jobs]
    span = (instants[-1] - instants[0]).total_seconds()
    missing, repeats = gaps_and_repeats(instants)
    kill_gap = failover_gap(jobs, killed_at)
    stall_gap = failover_gap(jobs, stopped_at)
    woken_log = stalled.log()[log_at_stop:]
    late_fires = [
        (task, when)
        for task, when in FIRED_LINE.findall(woken_log)
        if datetime.fromisoformat(when) >= stopped_at
    ]
    print(
        f"\n{len(jobs)} jobs over {span:.0f}s of schedule ({elapsed:.0f}s run); "
        f"duplicates {len(repeats)}, missed {len(missing)}; failover gap after SIGKILL "
        f"{kill_gap:.2f}s, after SIGSTOP {stall_gap:.2f}s; final epoch {last_leader.epoch}; "
        f"the woken ex-leader logged {woken_log.count('jobs.scheduler.fence')} fence(s), "
        f"{len(late_fires)} fire(s)"
    )

    assert span >= 60, schedulers.report()
    assert len({job.key for job in jobs}) == len(jobs)
    assert repeats == [], f"fired twice: {repeats}"
    assert missing == [], f"never fired: {missing}"
    assert len(jobs) == span + 1
    assert kill_gap <= GAP_BUDGET + GAP_SLACK, schedulers.report()
    assert stall_gap <= GAP_BUDGET + GAP_SLACK, schedulers.report()
    # The woken ex-leader found another holder: it fired nothing after it was stopped (a fire
    # in flight when it woke would have been fenced and logged as such).
    assert late_fires == [], woken_log
    assert "jobs.scheduler.following" in woken_log or "jobs.scheduler.fence" in woken_log
    # Three holders at least (a, then the successor, then whoever took over from the stall).
    assert last_leader.epoch >= 3
    # The task's row agrees with the jobs: the watermark is the last fire, and its job.
    state = task_row(EVERY_SECOND)
    assert state.watermark == instants[-1]
    assert state.last_fire_at == instants[-1]
    assert state.last_job_id == jobs[-1].id
