"""A slot lent at once, with a real ``jobs_worker`` process SIGKILLed while a run rides it.

Six runs of one key capped at 1 (``process.limited_traced``, 0.3 s each) on one worker of three
slots with a flush window of a second: as each body ends, the next run starts on its slot in
memory, while the store's row still names the ended run, whose settle waits for the flush. The
worker is killed once a second body has begun and no settle has landed (a run rides a lent
slot). From the rows: the row is free again within lease + rescue interval of the kill; a
second worker completes every job; no two runs overlap by the store's stamps; no lease row is
left. From the bodies' own wall-clock moments (a killed body's end is the kill): no two bodies
of the key ever ran at once."""

from __future__ import annotations

import signal
import time
from itertools import pairwise
from pathlib import Path

import pytest

from tests.process.audit import db_now, enqueue, slot_freed_then_one_at_a_time
from tests.process.conftest import Workers
from ultimat3_jobs.models import Job, JobLease

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def test_a_worker_killed_while_a_run_rides_a_lent_slot_frees_it_and_no_bodies_overlap(
    workers: Workers, tmp_path: Path
) -> None:
    first = workers.start("lend-0", concurrency=3, ack_flush=1.0)
    workers.wait_registered(first, timeout=60)
    # A body ended first: runs wait for a lent slot only once bodies proved short.
    warm = tmp_path / "warm"
    warm.mkdir()
    enqueue("process.limited_traced", [{"key": "warm", "trace": str(warm), "sleep": 0.0}])
    deadline = time.monotonic() + 60
    while not Job.objects.filter(state="completed").exists():
        assert time.monotonic() < deadline, "the first body never completed"
        time.sleep(0.02)
    inputs = [{"key": "lent", "trace": str(tmp_path), "sleep": 0.3} for _ in range(6)]
    ids = enqueue("process.limited_traced", inputs, max_attempts=10)
    while True:
        begun = len(list(tmp_path.glob("*.start")))
        landed = Job.objects.filter(id__in=ids, state="completed").count()
        if begun >= 2 and landed == 0:
            break  # a second body runs on the first's slot, whose settle has not landed
        assert landed == 0 and time.monotonic() < deadline, (begun, landed)
        time.sleep(0.01)
    held = list(JobLease.objects.filter(kind="concurrency").values_list("job_id", flat=True))
    assert len(held) == 1
    first.signal(signal.SIGKILL)
    first.wait(30)
    killed_at, killed_clock = db_now(), time.time()

    workers.start("lend-1", concurrency=3)
    slot = JobLease.objects.filter(job_id=held[0], kind="concurrency")
    slot_freed_then_one_at_a_time(workers, slot, ids, killed_at)
    bodies = _bodies(tmp_path, killed_clock)
    assert len(bodies) >= 7  # six runs, one of them begun again after the kill at least
    for (_, end), (start, _) in pairwise(bodies):
        assert start >= end, bodies


def _bodies(trace: Path, killed: float) -> list[tuple[float, float]]:
    """Every body's wall-clock interval, by start; a body with no end was killed."""
    spans = []
    for start in trace.glob("*.start"):
        end = start.with_suffix(".end")
        spans.append((float(start.read_text()), float(end.read_text()) if end.exists() else killed))
    return sorted(spans)
