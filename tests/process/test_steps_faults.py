"""Durable steps under faults, with real ``jobs_worker`` processes.

* SIGKILL at random moments: workers running jobs of 10 steps (each step writes an effect row
  and answers the attempt that ran it) are killed again and again and replaced. Every job
  completes; each step is stored once, by the attempt whose effect row is the last of that
  step; no step runs again once stored (no effect row of a later attempt); a step runs twice
  only when a kill landed between its effect and its write (at most one repeat per kill per
  job in flight). ``-m slow`` runs 200 rounds, the default run a few.
* SIGSTOP past the lease: worker A's step is still running when it is stopped; worker B
  rescues the job and completes it; A is continued and its step write is refused by the fence
  (``JobLeaseLost``), changing nothing.
"""

from __future__ import annotations

import os
import random
import signal
import time
import uuid
from collections import Counter, defaultdict

import pytest

from tests.process.audit import completed_counter, enqueue, settled
from tests.process.conftest import Workers
from tests.process.test_stall import _hold_registry_row
from tests.processapp.jobs import STALE_STEP, STEPS
from tests.testapp.models import Effect
from ultimat3_jobs.models import Job, JobStep

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

STEPS_PER_JOB = 10


def _wave(size: int) -> list[uuid.UUID]:
    return enqueue(STEPS, [{"steps": STEPS_PER_JOB, "pause": 0.05}] * size, max_attempts=50)


def _kill_rounds(workers: Workers, rounds: int, jobs: int, seed: int, top_up: bool = False) -> None:
    """``rounds`` kills (fewer when the jobs end first, unless ``top_up`` keeps a backlog)."""
    rng = random.Random(seed)
    ids = _wave(jobs)
    live = [workers.start(f"steps-{n}", concurrency=3) for n in range(2)]
    workers.wait_registered(*live)
    started = len(live)
    kills = 0
    for _ in range(rounds):
        if top_up and Job.objects.filter(id__in=ids, state="queued").count() < jobs // 2:
            ids += _wave(jobs)
        if settled(ids):
            break
        time.sleep(rng.uniform(0.1, 0.6))
        victim = rng.choice(live)
        victim.kill()
        victim.expect_exit(-signal.SIGKILL)
        kills += 1
        live.remove(victim)
        replacement = workers.start(f"steps-{started}", concurrency=3)
        started += 1
        workers.wait_registered(replacement)  # a victim is always a worker that started
        live.append(replacement)
    workers.wait(lambda: settled(ids), timeout=180, what="every job settled")
    for process in live:
        process.signal(signal.SIGTERM)
        assert process.wait(20) == 0, workers.report()

    states = Counter(Job.objects.filter(id__in=ids).values_list("state", flat=True))
    assert states == {"completed": len(ids)}, workers.report()
    assert completed_counter(STEPS) == len(ids)
    stored = defaultdict(dict)
    for job_id, name, status, output in JobStep.objects.filter(job_id__in=ids).values_list(
        "job_id", "name", "status", "output"
    ):
        assert status == "done"
        stored[job_id][name] = output
    effects = defaultdict(list)
    for job_id, label, attempt in Effect.objects.filter(job_id__in=ids).values_list(
        "job_id", "label", "attempt"
    ):
        effects[(job_id, label)].append(attempt)
    repeats = 0
    for job_id in ids:
        assert sorted(stored[job_id]) == sorted(f"s{n}" for n in range(STEPS_PER_JOB))
        for name, by in stored[job_id].items():
            ran = sorted(effects[(job_id, name)])
            assert ran and ran[-1] == by, f"{job_id} {name}: stored by {by}, ran in {ran}"
            repeats += len(ran) - 1
    print(f"\n[steps/sigkill] {kills} kills, {len(ids)} jobs, {repeats} steps repeated")
    assert kills >= min(rounds, 3), "the jobs ended before the kills could test anything"
    assert repeats <= kills * 3, "a step ran again after it was stored"


def test_workers_killed_mid_step_lose_no_step_and_repeat_none_stored(workers: Workers) -> None:
    _kill_rounds(
        workers, rounds=int(os.environ.get("ULTIMAT3_STEP_KILL_ROUNDS", "6")), jobs=30, seed=13
    )


@pytest.mark.slow
def test_workers_killed_mid_step_200_rounds(workers: Workers) -> None:
    rounds = int(os.environ.get("ULTIMAT3_STEP_KILL_ROUNDS_SLOW", "200"))
    _kill_rounds(workers, rounds=rounds, jobs=30, seed=2026, top_up=True)


def test_a_stalled_runner_step_write_is_refused_and_changes_nothing(workers: Workers) -> None:
    [job_id] = enqueue(STALE_STEP, [{"first_sleep": 8.0}])
    a = workers.start("steps-stall-a", concurrency=1)
    workers.wait(
        lambda: Effect.objects.filter(job_id=job_id, attempt=1).exists(),
        timeout=30,
        what="A started the step",
    )
    # A's maintenance is held on its registry row, so after SIGCONT the body's step write, not
    # a heartbeat, is the first to reach the database.
    with _hold_registry_row(workers, a.worker_id):
        a.signal(signal.SIGSTOP)
        b = workers.start("steps-stall-b", concurrency=1)
        workers.wait(
            lambda: Job.objects.filter(id=job_id, state="completed").exists(),
            timeout=30,
            what="B completed the job",
        )
        won = Job.objects.get(id=job_id)
        assert won.result == {"attempt": 2, "pid": b.pid}
        a.signal(signal.SIGCONT)
        workers.wait(
            lambda: f"step 'slow' (done) of job {job_id} did not land" in a.log(),
            timeout=20,
            what="A's stale step write refused",
        )
    a.signal(signal.SIGTERM)
    assert a.wait(15) == 0, workers.report()
    (step,) = JobStep.objects.filter(job_id=job_id)
    assert (step.status, step.output) == ("done", {"attempt": 2, "pid": b.pid})
    final = Job.objects.get(id=job_id)
    assert (final.state, final.attempt, final.result) == ("completed", 2, won.result)
    assert completed_counter(STALE_STEP) == 1
    assert "X_JOB_LEASE_LOST" not in (final.errors[-1]["message"] if final.errors else "")
