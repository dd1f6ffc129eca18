"""Keyed concurrency caps under SIGKILL, with real ``jobs_worker`` processes.

Jobs over 20 keys, ten capped at 1 (``process.limited_one``) and ten at 3
(``process.limited_three``), each sleeping 0.1 to 0.5 s, drained by 4 worker processes while
every 2 s a random worker (of those holding a slot at that instant) is SIGKILLed and a
replacement started, until a fifth of the jobs is left. At the end, from the rows alone:

* no two runs of one key overlap beyond its limit, by the database's own ``started_at`` (the
  moment the run's slot was granted) and ``finished_at`` stamps;
* every job completed;
* every slot a killed worker held was free again within lease + rescue interval of the kill
  (its row deleted by the rescue, or taken over once expired), with slack for a loaded machine;
* no lease row is left.

(A killed attempt's own interval is not kept: its job's next attempt stamps ``started_at``
again. Its slot stays held until its lease expires, so no later run can overlap it.)

The default run drains ``ULTIMAT3_LIMITS_KILL_JOBS`` jobs (200); ``-m slow`` drains 2,000.
"""

from __future__ import annotations

import os
import random
import signal
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime

import pytest

from tests.limits.support import most_at_once
from tests.process.audit import db_now, enqueue_named, settled
from tests.process.conftest import WorkerProcess, Workers
from tests.settings_process import PROCESS_TIMINGS
from ultimat3_jobs.models import Job, JobLease

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

LEASE = float(PROCESS_TIMINGS["VISIBILITY_TIMEOUT_SECONDS"])
RESCUE = float(PROCESS_TIMINGS["RESCUE_INTERVAL_SECONDS"])
FREE_SLACK = 10.0
"""Beyond lease + rescue interval: four workers' maintenance threads share two cores."""
WORKERS = 4
CONCURRENCY = 3
KILL_EVERY = 2.0
KEYS = 20
LIMITED = {1: "process.limited_one", 3: "process.limited_three"}


@dataclass
class DeadHolder:
    """The slots a killed worker's attempts held when it died, and when they were free."""

    worker_id: str
    killed_at: datetime
    rows: set[tuple[uuid.UUID, uuid.UUID]]
    """(job id, claim token) of each held concurrency slot."""
    free_at: datetime | None = None
    keys: list[str] = field(default_factory=list)


def plan(total: int, rng: random.Random) -> dict[tuple[str, int], list[uuid.UUID]]:
    """Enqueue ``total`` jobs, each of a key drawn at random from the 20, in the order drawn;
    answers their ids per (key, limit).

    The order matters to the drain's pace, not to what the test proves: the claim takes the
    oldest due jobs whatever their key, so jobs enqueued key after key put one key's hundred
    jobs at the head of the queue, where every worker's claim meets that key busy and the
    fleet runs about one run at a time."""
    drawn: list[tuple[str, int]] = []
    for _ in range(total):
        index = rng.randrange(KEYS)
        drawn.append((f"k{index}", 1 if index < KEYS // 2 else 3))
    jobs = [(LIMITED[limit], {"key": key, "sleep": rng.uniform(0.1, 0.5)}) for key, limit in drawn]
    ids: dict[tuple[str, int], list[uuid.UUID]] = defaultdict(list)
    for group, job_id in zip(drawn, enqueue_named(jobs, max_attempts=30), strict=True):
        ids[group].append(job_id)
    return ids


def holders_of(worker_id: str) -> set[tuple[uuid.UUID, uuid.UUID]]:
    running = Job.objects.filter(state="running", worker_id=worker_id).values_list(
        "id", "claim_token"
    )
    pairs = set(running)
    held = JobLease.objects.filter(kind="concurrency", job_id__in=[job_id for job_id, _ in pairs])
    return {(row.job_id, row.claim_token) for row in held if (row.job_id, row.claim_token) in pairs}


def still_held(dead: DeadHolder) -> bool:
    ids = [job_id for job_id, _ in dead.rows]
    rows = JobLease.objects.filter(job_id__in=ids).values_list("job_id", "claim_token")
    return any(pair in dead.rows for pair in rows)


def unfinished(ids: list[uuid.UUID]) -> int:
    return Job.objects.filter(id__in=ids, state__in=["queued", "running"]).count()


def waiting(ids: list[uuid.UUID]) -> dict[str, object]:
    """What the jobs not done are doing, for a failure message."""
    now = db_now()
    rows = Job.objects.filter(id__in=ids, state__in=["queued", "running"])
    return {
        "states": dict(Counter(rows.values_list("state", flat=True))),
        "due": rows.filter(state="queued", run_at__lte=now).count(),
        "attempts": sorted(Counter(rows.values_list("attempt", flat=True)).items()),
        "leases": list(JobLease.objects.values_list("key", "slot", "expires_at")),
        "now": now,
    }


def chaos(workers: Workers, total: int, seed: int) -> None:
    rng = random.Random(seed)
    ids = plan(total, rng)
    every = [job_id for group in ids.values() for job_id in group]
    generation = iter(range(10_000))
    live: list[WorkerProcess] = [
        workers.start(f"limits-{next(generation)}", concurrency=CONCURRENCY) for _ in range(WORKERS)
    ]
    workers.wait_registered(*live, timeout=60)

    dead: list[DeadHolder] = []
    next_kill = time.monotonic() + KILL_EVERY
    give_up = time.monotonic() + max(180.0, total / 4)
    while not settled(every):
        workers.check_started()
        assert time.monotonic() < give_up, f"jobs still waiting: {waiting(every)}"
        for holder in dead:
            if holder.free_at is None and not still_held(holder):
                holder.free_at = db_now()
        if time.monotonic() < next_kill or unfinished(every) <= total // 5:
            # The kills stop for the last fifth: a job that is the only one left to run would
            # be killed again at each try, and never end.
            time.sleep(0.05)
            continue
        # A random worker among those holding a slot this instant (none does: look again).
        holding = [p for p in live if holders_of(p.worker_id)]
        if not holding:
            time.sleep(0.05)
            continue
        victim = rng.choice(holding)
        victim.signal(signal.SIGKILL)
        victim.wait(30)
        killed_at = db_now()
        dead.append(DeadHolder(victim.worker_id, killed_at, holders_of(victim.worker_id)))
        live.remove(victim)
        live.append(workers.start(f"limits-{next(generation)}", concurrency=CONCURRENCY))
        next_kill = time.monotonic() + KILL_EVERY

    # Every dead holder's slots free, each within lease + rescue interval of its kill.
    deadline = time.monotonic() + LEASE + RESCUE + FREE_SLACK
    while any(h.free_at is None for h in dead) and time.monotonic() < deadline:
        for holder in dead:
            if holder.free_at is None and not still_held(holder):
                holder.free_at = db_now()
        time.sleep(0.05)
    caught = [h for h in dead if h.rows]
    late = [
        (h.worker_id, h.killed_at, h.free_at)
        for h in caught
        if h.free_at is None
        or (h.free_at - h.killed_at).total_seconds() > LEASE + RESCUE + FREE_SLACK
    ]
    assert not late, late

    states = set(Job.objects.filter(id__in=every).values_list("state", flat=True))
    assert states == {"completed"}, workers.report()
    over = {}
    for (key, limit), members in ids.items():
        spans = list(Job.objects.filter(id__in=members).values_list("started_at", "finished_at"))
        peak = most_at_once(spans)
        if peak > limit:
            over[(key, limit)] = peak
    assert not over, over
    assert JobLease.objects.filter(kind="concurrency").count() == 0
    assert JobLease.objects.count() == 0
    kills = len(dead)
    print(
        f"{total} jobs, {kills} kills, {len(caught)} caught holding slots "
        f"({sum(len(h.rows) for h in caught)} slots), all freed in time"
    )
    assert kills >= 2 and caught, "no kill caught a worker holding a slot"


def test_keyed_caps_hold_while_workers_are_killed(workers: Workers) -> None:
    chaos(workers, int(os.environ.get("ULTIMAT3_LIMITS_KILL_JOBS", "200")), seed=14)


@pytest.mark.slow
def test_keyed_caps_hold_while_workers_are_killed_at_full_scale(workers: Workers) -> None:
    chaos(workers, int(os.environ.get("ULTIMAT3_LIMITS_KILL_JOBS_SLOW", "2000")), seed=1414)
