"""The backfill ledger (``drivers/backfill_seam.py``) on both drivers: one row per run, a
replayed batch writes nothing, only a completed run blocks a new run of the same name and
scope."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.drivers.steps_support import running
from ultimat3_jobs.errors import StoreRefused


@pytest.fixture(autouse=True)
def _capability(request: pytest.FixtureRequest) -> None:
    """Every driver of the parity suite keeps the backfill ledger."""
    if "driver" not in request.fixturenames:
        return
    driver = request.getfixturevalue("driver")
    assert driver.has_backfill_ledger, f"the {driver.name} driver keeps the backfill ledger"


def start(driver, run_id=None, name="b", scope="all"):
    return driver.backfill_start(
        name=name, scope=scope, run_id=run_id or uuid.uuid4(), environment="prod"
    )


def test_a_run_is_recorded_once_and_advances_batch_by_batch(driver) -> None:
    run = start(driver)
    assert run is not None and (run.status, run.rows_done, run.cursor) == ("running", 0, None)
    assert run.environment == "prod" and run.started_at is not None
    assert start(driver, run.run_id) == run, "a run recorded already is left as it is"
    assert driver.backfill_advance(run_id=run.run_id, batch=1, cursor_json="10", rows=10)
    assert driver.backfill_advance(run_id=run.run_id, batch=2, cursor_json="20", rows=10)
    # A replayed batch (its number not above what is recorded) writes nothing.
    assert not driver.backfill_advance(run_id=run.run_id, batch=2, cursor_json="20", rows=10)
    assert not driver.backfill_advance(run_id=run.run_id, batch=1, cursor_json="10", rows=10)
    (listed,) = driver.backfill_list()
    assert (listed.rows_done, listed.batches_done, listed.cursor) == (20, 2, 20)
    assert driver.backfill_finish(run_id=run.run_id, status="completed")
    assert not driver.backfill_finish(run_id=run.run_id, status="failed")
    assert not driver.backfill_advance(run_id=run.run_id, batch=3, cursor_json="30", rows=1)
    (listed,) = driver.backfill_list()
    assert listed.status == "completed" and listed.finished_at is not None


def test_only_a_completed_run_blocks_a_new_run_of_the_same_name_and_scope(driver) -> None:
    failed = start(driver)
    assert driver.backfill_finish(run_id=failed.run_id, status="failed", error="boom")
    done = start(driver)
    assert done is not None, "a failed run does not block"
    assert driver.backfill_finish(run_id=done.run_id, status="completed")
    assert start(driver) is None
    assert start(driver, scope="org-2") is not None, "another scope is another ledger key"
    assert start(driver, name="other") is not None
    runs = driver.backfill_list()
    assert [r.status for r in runs if r.name == "b" and r.scope == "all"] == [
        "completed",
        "failed",
    ]
    assert runs[-1].error == "boom"


def test_two_running_runs_cannot_both_complete(driver) -> None:
    first, second = start(driver), start(driver)
    assert driver.backfill_finish(run_id=first.run_id, status="completed")
    with pytest.raises(StoreRefused):
        driver.backfill_finish(run_id=second.run_id, status="completed")


def test_the_list_is_bounded_and_newest_first(driver) -> None:
    ids = [start(driver, name=f"b{n}").run_id for n in range(3)]
    assert [r.run_id for r in driver.backfill_list(limit=2)] == ids[::-1][:2] or len(
        {r.started_at for r in driver.backfill_list()}
    ) < 3
    assert len(driver.backfill_list(limit=2)) == 2


def batch_put(driver, job, batch: int, output: dict, token=None) -> bool:
    return driver.backfill_step_put(
        job_id=job.id,
        claim_token=token or job.claim_token,
        name=f"batch:{batch}",
        seq=batch,
        kind="run",
        status="done",
        output_json=json.dumps(output),
        batch=batch,
    )


def test_a_batch_step_put_records_the_step_and_counts_the_batch_once(driver) -> None:
    """``backfill_step_put``: the batch's step recorded done and, when it swept rows, the
    ledger's count of it (the run is the job); a batch that swept nothing is recorded, not
    counted; a step already recorded does not land and counts nothing more."""
    job = running(driver)
    assert start(driver, job.id) is not None
    assert batch_put(driver, job, 1, {"cursor": 10, "rows": 10, "done": False})
    assert batch_put(driver, job, 2, {"cursor": 10, "rows": 0, "done": True})
    assert not batch_put(driver, job, 1, {"cursor": 10, "rows": 10, "done": False})
    steps = {s.name: s.output for s in driver.step_get_many(job_id=job.id)}
    assert steps == {
        "batch:1": {"cursor": 10, "rows": 10, "done": False},
        "batch:2": {"cursor": 10, "rows": 0, "done": True},
    }
    (run,) = driver.backfill_list()
    assert (run.rows_done, run.batches_done, run.cursor) == (10, 1, 10)


def test_a_batch_step_put_that_loses_its_fence_records_nothing(driver) -> None:
    """A lost fence: no step (the caller's transaction, where there is one, takes the count
    back with it). The count is written first where there is none, so a replay that records
    the batch never counts it twice."""
    job = running(driver)
    assert start(driver, job.id) is not None
    output = {"cursor": 3, "rows": 3, "done": True}
    assert not batch_put(driver, job, 1, output, token=uuid.uuid4())
    assert driver.step_get_many(job_id=job.id) == []
    assert batch_put(driver, job, 1, output)
    (run,) = driver.backfill_list()
    assert (run.rows_done, run.batches_done) == (3, 1)
