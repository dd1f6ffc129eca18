"""A backfill under SIGKILL, with real ``jobs_worker`` processes: the worker running the run is
killed again and again and replaced, in both ``rows=`` modes (a list of instances, the
batch's key range as a QuerySet). Every row is handled at least once, the run completes, the
ledger holds one ``completed`` run with every row counted once, the stored cursors only move
forward, and the rows handled twice are at most one batch per kill. The default run sweeps
5,000 rows; ``-m slow`` sweeps 100,000 (``ULTIMAT3_BACKFILL_ROWS_SLOW`` overrides it)."""

from __future__ import annotations

import os
import random
import signal
import time

import pytest
from django.db.models import Sum

from tests.process.audit import enqueue, settled
from tests.process.conftest import Workers
from tests.processapp.jobs import BACKFILL, BACKFILL_RANGE
from tests.testapp.models import SweepRow
from ultimat3_jobs.models import Backfill, Job, JobStep

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def _batch_steps(job_id) -> list[tuple[int, dict]]:
    found = JobStep.objects.filter(job_id=job_id, name__startswith="batch:")
    return sorted(
        (int(name.split(":")[1]), output) for name, output in found.values_list("name", "output")
    )


def _sweep_with_kills(
    workers: Workers,
    monkeypatch,
    *,
    rows: int,
    batch: int,
    kills: int,
    seed: int,
    name: str = BACKFILL,
) -> None:
    SweepRow.objects.bulk_create([SweepRow() for _ in range(rows)], batch_size=5000)
    monkeypatch.setenv("ULTIMAT3_BACKFILL_BATCH", str(batch))
    rng = random.Random(seed)
    [job_id] = enqueue(name, [{}], max_attempts=50)
    started = 0
    worker = workers.start(f"backfill-{started}", concurrency=1)
    done_kills = 0
    while done_kills < kills and not settled([job_id]):
        before = len(_batch_steps(job_id))
        workers.wait(
            lambda before=before: len(_batch_steps(job_id)) > before or settled([job_id]),
            timeout=120,
            what="the run stored another batch",
        )
        if settled([job_id]):
            break
        time.sleep(rng.uniform(0.0, 0.2))
        worker.kill()
        worker.expect_exit(-signal.SIGKILL)
        done_kills += 1
        started += 1
        worker = workers.start(f"backfill-{started}", concurrency=1)
    workers.wait(lambda: settled([job_id]), timeout=300, what="the backfill settled")
    # The run may have settled just before the last kill, so the replacement can still be
    # starting: a SIGTERM before its handlers are installed would end it with -15, not 0.
    workers.wait_registered(worker, timeout=60)
    worker.signal(signal.SIGTERM)
    assert worker.wait(20) == 0, workers.report()

    job = Job.objects.get(id=job_id)
    assert job.state == "completed", (job.errors, workers.report())
    assert SweepRow.objects.filter(handled=0).count() == 0, "a row was never handled"
    handled = SweepRow.objects.aggregate(n=Sum("handled"))["n"]
    (run,) = Backfill.objects.filter(name=name)
    assert (run.status, run.run_id, run.rows_done) == ("completed", job_id, rows)
    steps = _batch_steps(job_id)
    assert [n for n, _ in steps] == list(range(1, len(steps) + 1))
    # Each batch that read rows moved the cursor forward; an empty last batch keeps it.
    cursors = [output["cursor"] for _, output in steps if output["rows"]]
    assert cursors == sorted(cursors) and len(set(cursors)) == len(cursors), "cursor went back"
    assert sum(output["rows"] for _, output in steps) == rows
    assert run.batches_done == len(cursors) and job.result["rows"] == rows
    again = handled - rows
    print(f"\n[{name}/sigkill] {done_kills} kills, {rows} rows, {again} handled twice")
    assert done_kills >= min(kills, 3), "the run ended before the kills could test anything"
    assert again <= done_kills * batch, "more than one batch re-handled per kill"


@pytest.mark.parametrize("name", [BACKFILL, BACKFILL_RANGE])
def test_a_backfill_survives_its_worker_killed_five_times(
    workers: Workers, monkeypatch, name: str
) -> None:
    rows = int(os.environ.get("ULTIMAT3_BACKFILL_ROWS", "5000"))
    _sweep_with_kills(workers, monkeypatch, rows=rows, batch=100, kills=5, seed=16, name=name)


@pytest.mark.slow
def test_a_backfill_of_100_000_rows_survives_five_kills(workers: Workers, monkeypatch) -> None:
    rows = int(os.environ.get("ULTIMAT3_BACKFILL_ROWS_SLOW", "100000"))
    monkeypatch.setenv("ULTIMAT3_BACKFILL_PAUSE", "0.01")
    _sweep_with_kills(workers, monkeypatch, rows=rows, batch=1000, kills=5, seed=2026)
