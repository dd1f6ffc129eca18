"""``backfill()``: one step per batch storing the cursor and a count (never the page), the
``x_backfills`` ledger, ``X_BACKFILL_*`` refusals, ``inspect_backfills()`` and ``jobs
backfill``. On PostgreSQL, through ``run_enqueued``."""

from __future__ import annotations

import dataclasses
import io
import json
import threading
import uuid
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction
from django.db.models import F, QuerySet

from tests.drivers.support import claim_one
from tests.testapp.models import Effect, SweepRow
from ultimat3_jobs import Retry
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.errors import BackfillInvalid, JobAborted
from ultimat3_jobs.factories import backfill, inspect_backfills, sources
from ultimat3_jobs.factories.backfill import _batch, backfill_declaration, run
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.model.steps import InlineWriter
from ultimat3_jobs.models import Backfill, Job, JobStep
from ultimat3_jobs.runtime.steps.attempt import bind_steps
from ultimat3_jobs.testing import run_enqueued

pytestmark = pytest.mark.django_db


def mark(rows: list[SweepRow]) -> None:
    SweepRow.objects.filter(pk__in=[row.pk for row in rows]).update(
        handled=F("handled") + 1, done=True
    )


sweep = backfill(
    "tests.backfill.sweep",
    queryset=SweepRow.objects.all(),
    handle=mark,
    batch_size=4,
    count=SweepRow.objects.filter(done=False),
)
later = backfill(
    "tests.backfill.later",
    queryset=SweepRow.objects.all(),
    handle=mark,
    batch_size=100,
    requires=["tests.backfill.sweep"],
    environments=["production"],
)


def missed(rows: list[SweepRow]) -> None:
    """Handles all but the last row of each page: the count catches it."""
    mark(rows[:-1])


leaky = backfill(
    "tests.backfill.leaky",
    queryset=SweepRow.objects.all(),
    handle=missed,
    batch_size=5,
    count=SweepRow.objects.filter(done=False),
)
stuck = backfill(
    "tests.backfill.stuck",
    pages=lambda cursor, limit: ([1, 2], 7),
    handle=lambda rows: None,
    batch_size=2,
)


def test_a_run_handles_every_row_batch_by_batch_and_completes_in_the_ledger() -> None:
    ids = [SweepRow.objects.create().pk for _ in range(10)]
    result = backfill_declaration(sweep.name).enqueue()
    summary = run_enqueued()
    assert summary.completed == (result.id,), summary.errors
    assert Job.objects.get(id=result.id).result == {"rows": 10, "batches": 3, "cursor": ids[-1]}
    assert sorted(SweepRow.objects.values_list("handled", flat=True)) == [1] * 10
    steps = dict(JobStep.objects.filter(job_id=result.id).values_list("name", "output"))
    assert steps["batch:1"] == {"cursor": ids[3], "rows": 4, "done": False}
    assert steps["batch:2"] == {"cursor": ids[7], "rows": 4, "done": False}
    assert steps["batch:3"] == {"cursor": ids[9], "rows": 2, "done": True}
    assert set(steps) == {"start", "batch:1", "batch:2", "batch:3", "count", "finish"}
    (run,) = Backfill.objects.filter(name=sweep.name)
    assert (run.status, run.scope, run.run_id, run.rows_done, run.batches_done) == (
        "completed",
        "all",
        result.id,
        10,
        3,
    )
    assert run.cursor == ids[-1] and run.finished_at is not None


def test_a_completed_backfill_is_never_run_again() -> None:
    SweepRow.objects.create()
    backfill_declaration(sweep.name).enqueue()
    run_enqueued()
    again = sweep.enqueue()
    summary = run_enqueued()
    assert summary.failed == (again.id,)
    assert "X_BACKFILL_COMPLETED" in summary.errors[again.id].message
    assert Backfill.objects.filter(name=sweep.name).count() == 1
    with pytest.raises(CommandError, match="X_BACKFILL_COMPLETED"):
        call_command("jobs", "backfill", "run", sweep.name)


@pytest.fixture
def memory_driver(settings):
    """The memory driver: a failed attempt's steps and ledger writes stay, as in a worker
    (``run_enqueued`` on PostgreSQL rolls a failed attempt back, ledger included)."""
    settings.ULTIMAT3_JOBS = {**settings.ULTIMAT3_JOBS, "DRIVER": "memory"}
    return get_driver()


def test_rows_left_after_the_last_batch_fail_the_run_as_stalled(memory_driver) -> None:
    for _ in range(7):
        SweepRow.objects.create()
    result = leaky.enqueue()
    summary = run_enqueued()
    assert summary.failed == (result.id,)
    message = summary.errors[result.id].message
    assert "X_BACKFILL_STALLED" in message and "2 row(s) still to do" in message
    (run,) = [r for r in memory_driver.backfill_list() if r.name == leaky.name]
    assert run.status == "failed" and "X_BACKFILL_STALLED" in run.error


def test_a_cursor_that_does_not_move_is_stalled() -> None:
    result = stuck.enqueue()
    summary = run_enqueued()
    assert summary.failed == (result.id,)
    assert "cursor did not move from 7" in summary.errors[result.id].message


def test_a_backfill_refuses_to_run_outside_its_environments(settings) -> None:
    result = later.enqueue()
    summary = run_enqueued()
    assert "X_BACKFILL_ENVIRONMENT" in summary.errors[result.id].message
    assert not Backfill.objects.filter(name=later.name).exists()
    settings.ULTIMAT3_JOBS = {**settings.ULTIMAT3_JOBS, "ENVIRONMENT": "production"}
    SweepRow.objects.create()
    again = backfill_declaration(later.name).enqueue()
    assert run_enqueued().completed == (again.id,)


def test_a_failed_batch_is_read_again_from_its_stored_cursor(memory_driver) -> None:
    """An attempt that fails in batch 2 is retried: batch 1 replays from its stored step (its
    page is not read or handled again), batch 2 re-reads its page from batch 1's cursor."""
    ids = [SweepRow.objects.create().pk for _ in range(6)]
    calls: list[list[int]] = []

    def crash_once(rows: list[SweepRow]) -> None:
        calls.append([row.pk for row in rows])
        if len(calls) == 2:
            raise RuntimeError("lost in batch 2")
        mark(rows)

    flaky = backfill(
        "tests.backfill.flaky",
        queryset=SweepRow.objects.all(),
        handle=crash_once,
        batch_size=3,
        retry=Retry(attempts=3, backoff_base_seconds=0, jitter=0),
    )
    result = flaky.enqueue()
    summary = run_enqueued()
    assert summary.retried == (result.id,) and summary.completed == (result.id,)
    assert calls == [ids[:3], ids[3:], ids[3:]]
    (run,) = [r for r in memory_driver.backfill_list() if r.name == flaky.name]
    assert (run.rows_done, run.batches_done, run.status) == (6, 2, "completed")


def test_a_replayed_batch_handles_its_page_again_and_counts_nothing_itself() -> None:
    """A worker killed after a batch's handle but before its step was stored: the replay
    handles that page again (at least once). The batch counts nothing itself: its count is
    written with its step's record (``backfill_step_put``), so the ledger counts it once."""
    ids = [SweepRow.objects.create().pk for _ in range(3)]
    declaration = backfill_declaration(sweep.name)
    run_id = uuid.uuid4()
    get_driver().backfill_start(name=sweep.name, scope="all", run_id=run_id, environment="")
    first = _batch(declaration, 1, None, threading.Event())
    again = _batch(declaration, 1, None, threading.Event())
    assert first == again == {"cursor": ids[-1], "rows": 3, "done": True}
    assert list(SweepRow.objects.values_list("handled", flat=True)) == [2, 2, 2]
    (run,) = Backfill.objects.filter(run_id=run_id)
    assert (run.rows_done, run.batches_done) == (0, 0)


def mark_range(rows: QuerySet[SweepRow]) -> None:
    rows.update(handled=F("handled") + 1, done=True)


ranged = backfill(
    "tests.backfill.ranged",
    queryset=SweepRow.objects.exclude(handled=5),
    handle=mark_range,
    batch_size=3,
    rows="queryset",
    count=SweepRow.objects.filter(done=False).exclude(handled=5),
)


def test_rows_queryset_hands_each_batch_as_its_key_range_without_loading_it() -> None:
    """Each batch is a QuerySet not yet evaluated: the source's filter within the key range
    after the stored cursor up to the batch's last key. Rows the source's filter leaves out
    stay out even inside a range; every other row is handled once."""
    ids = [SweepRow.objects.create(handled=5 if n in (1, 5) else 0).pk for n in range(10)]
    kept = [pk for n, pk in enumerate(ids) if n not in (1, 5)]
    seen: list[list[int]] = []

    def record(rows: QuerySet[SweepRow]) -> None:
        assert isinstance(rows, QuerySet) and rows._result_cache is None
        seen.append(sorted(rows.values_list("pk", flat=True)))
        mark_range(rows)

    declaration = backfill_declaration(ranged.name)
    cursor, outputs = None, []
    for number in range(1, 5):
        recording = dataclasses.replace(declaration, handle=record)
        output = _batch(recording, number, cursor, threading.Event())
        outputs.append(output)
        cursor = output["cursor"]
        if output["done"]:
            break
    assert seen == [kept[0:3], kept[3:6], kept[6:8]]
    assert outputs == [
        {"cursor": kept[2], "rows": 3, "done": False},
        {"cursor": kept[5], "rows": 3, "done": False},
        {"cursor": kept[7], "rows": 2, "done": True},
    ]
    handled = dict(SweepRow.objects.values_list("pk", "handled"))
    assert [handled[pk] for pk in ids] == [1, 5, 1, 1, 1, 5, 1, 1, 1, 1]


def test_rows_queryset_runs_to_completion_and_ends_on_an_empty_batch_after_a_full_one() -> None:
    ids = [SweepRow.objects.create().pk for _ in range(6)]
    result = ranged.enqueue()
    summary = run_enqueued()
    assert summary.completed == (result.id,), summary.errors
    assert Job.objects.get(id=result.id).result == {"rows": 6, "batches": 3, "cursor": ids[-1]}
    assert list(SweepRow.objects.order_by("pk").values_list("handled", flat=True)) == [1] * 6
    steps = dict(JobStep.objects.filter(job_id=result.id).values_list("name", "output"))
    assert steps["batch:3"] == {"cursor": ids[-1], "rows": 0, "done": True}
    (run,) = Backfill.objects.filter(name=ranged.name)
    assert (run.status, run.rows_done, run.batches_done) == ("completed", 6, 2)


def test_rows_queryset_a_replayed_batch_re_reads_the_same_range(memory_driver) -> None:
    """An attempt that fails in batch 2 is retried: batch 2's range is read again from batch
    1's stored cursor, the same rows; the ledger counts each batch once."""
    ids = [SweepRow.objects.create().pk for _ in range(5)]
    calls: list[list[int]] = []

    def crash_once(rows: QuerySet[SweepRow]) -> None:
        calls.append(sorted(rows.values_list("pk", flat=True)))
        mark_range(rows)
        if len(calls) == 2:
            raise RuntimeError("lost in batch 2, after its update")

    flaky = backfill(
        "tests.backfill.flaky_range",
        queryset=SweepRow.objects.all(),
        handle=crash_once,
        batch_size=3,
        rows="queryset",
        retry=Retry(attempts=3, backoff_base_seconds=0, jitter=0),
    )
    result = flaky.enqueue()
    summary = run_enqueued()
    assert summary.retried == (result.id,) and summary.completed == (result.id,)
    assert calls == [ids[:3], ids[3:], ids[3:]]
    (run,) = [r for r in memory_driver.backfill_list() if r.name == flaky.name]
    assert (run.rows_done, run.batches_done, run.status) == (5, 2, "completed")


def test_a_batch_writes_its_ledger_count_and_its_step_commit_together() -> None:
    """On PostgreSQL a batch is an ``atomic=True`` step: a handle that fails after its update
    leaves neither the update, nor a ledger count, nor the batch's step (its cursor)."""
    SweepRow.objects.create()

    def fail_after(rows: QuerySet[SweepRow]) -> None:
        mark_range(rows)
        raise RuntimeError("after the update")

    declaration = dataclasses.replace(backfill_declaration(ranged.name), handle=fail_after)
    job_id = ranged.enqueue().id
    driver = get_driver()
    claimed = claim_one(driver)
    assert claimed.id == job_id
    ctx = JobContext(job_id=job_id, name=ranged.name, attempt=claimed.attempt)
    bind_steps(
        ctx, driver=driver, claim_token=claimed.claim_token, is_async=False, writer=InlineWriter()
    )
    with pytest.raises(RuntimeError, match="after the update"):
        run(declaration, ctx)
    assert list(SweepRow.objects.values_list("handled", flat=True)) == [0]
    (ledger,) = Backfill.objects.filter(run_id=job_id)
    assert (ledger.rows_done, ledger.batches_done, ledger.status) == (0, 0, "running")
    assert set(JobStep.objects.filter(job_id=job_id).values_list("name", flat=True)) == {"start"}


def test_the_ledger_advance_lets_its_transaction_commit_without_waiting_for_the_flush() -> None:
    """The run's later synchronous commits (its finish step, its settle) flush it."""
    run_id = uuid.uuid4()
    driver = get_driver()
    driver.backfill_start(name=sweep.name, scope="all", run_id=run_id, environment="")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("show synchronous_commit")
        assert cursor.fetchone()[0] == "on"
        assert driver.backfill_advance(run_id=run_id, batch=1, cursor_json="1", rows=1)
        cursor.execute("show synchronous_commit")
        assert cursor.fetchone()[0] == "off"


def test_the_throttle_wait_is_cancellable() -> None:
    slow = backfill(
        "tests.backfill.slow",
        queryset=SweepRow.objects.all(),
        handle=mark,
        batch_size=1,
        rate=0.001,
    )
    cancelled = threading.Event()
    cancelled.set()
    with pytest.raises(JobAborted):
        _batch(backfill_declaration(slow.name), 1, None, cancelled)


def test_inspect_and_the_pending_gate() -> None:
    views = {view.name: view for view in inspect_backfills(environment="production")}
    assert views[sweep.name].pending and views[sweep.name].state == "pending"
    assert views[later.name].blocked_by == (sweep.name,)
    staging = {view.name: view for view in inspect_backfills(environment="staging")}
    assert not staging[later.name].applies and not staging[later.name].pending
    out = io.StringIO()
    with pytest.raises(CommandError, match=r"backfill\(s\) pending") as raised:
        call_command("jobs", "backfill", "--pending", "--environment", "production", stdout=out)
    assert raised.value.returncode == 1
    assert sweep.name in out.getvalue() and "waits for tests.backfill.sweep" in out.getvalue()
    SweepRow.objects.create()
    out = io.StringIO()
    call_command("jobs", "backfill", "run", sweep.name, stdout=out)
    assert f"backfill {sweep.name} started" in out.getvalue()
    run_enqueued()
    out = io.StringIO()
    call_command("jobs", "backfill", "--json", "--environment", "production", stdout=out)
    document = {row["name"]: row for row in json.loads(out.getvalue())}
    assert document[sweep.name]["state"] == "completed"
    assert document[sweep.name]["run"]["rows_done"] == 1
    assert document[later.name]["blocked_by"] == []


@pytest.mark.parametrize(
    ("options", "rule"),
    [
        ({"batch_size": 0}, "batch_size must be an integer from 1 to 10000"),
        ({"batch_size": 10_001}, "batch_size must be an integer"),
        ({"batch_size": 5, "pages": lambda c, n: ([], None)}, "exactly one of queryset"),
        ({"batch_size": 5, "queryset": None}, "exactly one of queryset"),
        ({"batch_size": 5, "rate": 0}, "rate must be a number"),
        ({"batch_size": 5, "tenant": lambda i: i["org"]}, 'tenant must be "none"'),
        ({"batch_size": 5, "queryset": JobStep.objects.all()}, "composite primary key"),
        ({"batch_size": 5, "queryset": Effect.objects.values("id")}, "model instances"),
        ({"batch_size": 5, "queryset": Effect.objects.all()[:5]}, "must not be sliced"),
        ({"batch_size": 5, "environments": "prod"}, "environments must be a list"),
        ({"batch_size": 5, "rows": "keys"}, 'rows must be "instances" or "queryset"'),
        ({"batch_size": 5, "rows": None}, 'rows must be "instances" or "queryset"'),
        (
            {
                "batch_size": 5,
                "queryset": None,
                "pages": lambda c, n: ([], None),
                "rows": "queryset",
            },
            'rows must be "instances" with pages=',
        ),
    ],
)
def test_a_bad_declaration_is_refused_with_x_backfill_invalid(options, rule) -> None:
    options.setdefault("queryset", Effect.objects.all())
    with pytest.raises(BackfillInvalid, match=rule) as raised:
        backfill("tests.backfill.bad", handle=mark, **options)
    assert raised.value.code == "X_BACKFILL_INVALID"


def run_ranged_seeing_statements() -> tuple[Any, list[str]]:
    """Run ``ranged`` to completion and answer its enqueue result and every statement sent."""
    seen: list[str] = []

    def spy(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    result = ranged.enqueue()
    with connection.execute_wrapper(spy):
        summary = run_enqueued()
    assert summary.completed == (result.id,), summary.errors
    return result, seen


def test_on_postgresql_a_batch_writes_its_step_and_its_count_in_one_statement() -> None:
    """Per batch: the key read, ``handle``'s update and one ``backfill_step_put`` (no separate
    ``backfill_advance``); the ledger still counts every row."""
    for _ in range(7):
        SweepRow.objects.create()
    result, seen = run_ranged_seeing_statements()
    named = [text.split("\n", 1)[0] for text in seen if text.startswith("-- ")]
    assert sum("A batch's step recorded done" in line for line in named) == 3
    assert not [text for text in seen if "batches_done = " in text and "with counted" not in text]
    (run,) = Backfill.objects.filter(run_id=result.id)
    assert (run.rows_done, run.batches_done, run.status) == (7, 3, "completed")


@pytest.mark.parametrize(("fresh_seconds", "reads"), [(60.0, 3), (-1.0, 11)])
def test_one_key_read_serves_up_to_eight_batches_while_fresh(
    monkeypatch, fresh_seconds, reads
) -> None:
    """30 rows in batches of 3: a read finds the boundaries of 8 batches (24 keys), the 9th
    batch reads the last 6, and the 11th finds none. A boundary found ahead and not fresh any
    more is read again: one read per batch. Either way every row is handled once."""
    monkeypatch.setattr(sources, "READ_AHEAD_SECONDS", fresh_seconds)
    ids = [SweepRow.objects.create().pk for _ in range(30)]
    result, seen = run_ranged_seeing_statements()
    assert sum("ROW_NUMBER()" in text for text in seen) == reads
    assert Job.objects.get(id=result.id).result == {"rows": 30, "batches": 11, "cursor": ids[-1]}
    assert list(SweepRow.objects.values_list("handled", flat=True)) == [1] * 30
