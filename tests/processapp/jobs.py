"""Bodies for the process tests; declared in the worker subprocesses only."""

from __future__ import annotations

import os
import time
from typing import Any

from ultimat3_jobs import Retry, job

STALE_WRITER = "process.stale_writer"


@job(name=STALE_WRITER, tenant="none", retry=Retry(attempts=3))
def stale_writer(
    ctx: Any, *, first_sleep: float = 8.0, cooperative: bool = False
) -> dict[str, Any]:
    """Writes an effect row; on its first attempt only, then sleeps ``first_sleep`` seconds
    (cut short by a cancel only when ``cooperative``); then reports progress and answers which
    attempt and process ran it. A stale first attempt therefore still tries to write its
    progress and its result after a later attempt has settled the job."""
    from tests.testapp.models import Effect

    Effect.objects.create(
        job_id=ctx.job_id, attempt=ctx.attempt, worker_pid=os.getpid(), label="stale_writer"
    )
    if ctx.attempt == 1:
        if cooperative:
            ctx.cancelled.wait(first_sleep)
        else:
            time.sleep(first_sleep)
    ctx.progress(1, 1, attempt=ctx.attempt, pid=os.getpid())
    return {"attempt": ctx.attempt, "pid": os.getpid()}


# -- durable steps (tests/process/test_steps_faults.py) ---------------------------------------

STEPS = "process.steps"
STALE_STEP = "process.stale_step"


@job(
    name=STEPS,
    tenant="none",
    retry=Retry(attempts=50, backoff_base_seconds=0.05, backoff_cap_seconds=0.1, jitter=0),
)
def steps_effects(ctx: Any, *, steps: int = 10, pause: float = 0.01) -> int:
    """``steps`` steps; each writes an effect row (labelled with the step) and answers the
    attempt that ran it."""
    from tests.testapp.models import Effect

    for n in range(steps):

        def effect(n: int = n) -> int:
            Effect.objects.create(
                job_id=ctx.job_id, attempt=ctx.attempt, worker_pid=os.getpid(), label=f"s{n}"
            )
            time.sleep(pause)
            return int(ctx.attempt)

        ctx.step.run(f"s{n}", effect)
    return steps


@job(name=STALE_STEP, tenant="none", retry=Retry(attempts=3, backoff_base_seconds=0.05, jitter=0))
def stale_step(ctx: Any, *, first_sleep: float = 8.0) -> dict[str, Any]:
    """One step that, on the first attempt only, sleeps ``first_sleep`` seconds (deaf to the
    cancel) before answering: a stale first attempt tries its step write after a later attempt
    has settled the job."""
    from tests.testapp.models import Effect

    def slow() -> dict[str, Any]:
        Effect.objects.create(
            job_id=ctx.job_id, attempt=ctx.attempt, worker_pid=os.getpid(), label="slow"
        )
        if ctx.attempt == 1:
            time.sleep(first_sleep)
        return {"attempt": ctx.attempt, "pid": os.getpid()}

    return dict(ctx.step.run("slow", slow))


# -- a consumer (tests/process/test_consumer_kills.py) ----------------------------------------

FEED = "process-feed"


def _handle_feed(items: list[Any]) -> None:
    """Record each item and the turn (the cursor before and after it) in the batch's
    transaction, then dawdle so that kills land mid-run."""
    from tests.featureapp.models import FeedHandled, FeedTurn
    from ultimat3_jobs.models import ConsumerCursor

    before = ConsumerCursor.objects.get(name=FEED).cursor
    FeedHandled.objects.bulk_create(FeedHandled(row_id=row.id, pid=os.getpid()) for row in items)
    FeedTurn.objects.create(before=before, after=items[-1].id, pid=os.getpid())
    time.sleep(0.1)


def _declare_feed() -> None:
    from tests.featureapp.models import FeedRow
    from ultimat3_jobs.consumers import consumer

    consumer(
        FEED,
        source=FeedRow.objects.all(),
        handle=_handle_feed,
        batch_size=int(os.environ.get("ULTIMAT3_FEED_BATCH", "50")),
        run_seconds=3,
        idle_seconds=0.2,
        supervise="* * * * * *",
        # The consumer's own five attempts, retried at once: a killed run is retried after
        # its lease, not after a backoff that doubles with each kill landing on it (1 to 16 s).
        retry=Retry(attempts=5, backoff_base_seconds=0.1, backoff_cap_seconds=0.5, jitter=0),
    )


_declare_feed()
# -- a backfill under SIGKILL (tests/process/test_backfill_kills.py) --------------------------

BACKFILL = "process.backfill"
BACKFILL_RANGE = "process.backfill_range"


def _sweep(rows: Any) -> None:
    """Count one more handle of each row, between two pauses: a kill in the first loses the
    batch, a kill in the second makes its replay handle the rows again. ``rows`` is a list of
    instances, or the batch's key range (``rows="queryset"``)."""
    from django.db.models import F

    from tests.testapp.models import SweepRow

    pause = float(os.environ.get("ULTIMAT3_BACKFILL_PAUSE", "0.05"))
    time.sleep(pause / 2)
    batch = (
        rows if hasattr(rows, "update") else SweepRow.objects.filter(pk__in=[r.pk for r in rows])
    )
    batch.update(handled=F("handled") + 1, done=True)
    time.sleep(pause / 2)


def _declare_backfill() -> None:
    from tests.testapp.models import SweepRow
    from ultimat3_jobs.factories import backfill

    for name, rows in ((BACKFILL, "instances"), (BACKFILL_RANGE, "queryset")):
        backfill(
            name,
            queryset=SweepRow.objects.all(),
            handle=_sweep,
            batch_size=int(os.environ.get("ULTIMAT3_BACKFILL_BATCH", "100")),
            rows=rows,
            count=SweepRow.objects.filter(done=False),
            retry=Retry(attempts=50, backoff_base_seconds=0.05, backoff_cap_seconds=0.1, jitter=0),
        )


_declare_backfill()


# -- a subject erase under SIGKILL (tests/process/test_subject_erase_kills.py) ----------------


def _erase_messages(page: Any) -> None:
    """The callable erase of the Message table: the author cleared, the body replaced."""
    page.update(author="", body="[erased]")


def declare_subject_tables() -> None:
    """Register the three subject tables (delete, anonymize, a callable), their page size from
    ``ULTIMAT3_SUBJECT_ERASE_PAGE``."""
    from tests.featureapp.models import Message, Profile, Purchase
    from ultimat3_jobs.subjects import register_subject_table

    page = int(os.environ.get("ULTIMAT3_SUBJECT_ERASE_PAGE", "10"))
    register_subject_table(Profile, "subject", erase="delete", page_size=page)
    register_subject_table(
        Purchase, "subject", erase="anonymize", anonymize={"address": ""}, page_size=page
    )
    register_subject_table(Message, "author", erase=_erase_messages, page_size=page)


def _dawdle_after_each_erased_page() -> None:
    """In a worker, pause ``ULTIMAT3_SUBJECT_ERASE_PAUSE`` seconds after each erase page has
    committed and before its step is stored: the window a kill must survive."""
    from ultimat3_jobs.subjects import requests

    pause = float(os.environ.get("ULTIMAT3_SUBJECT_ERASE_PAUSE", "0"))
    if pause <= 0:
        return
    erase = requests.erase_page

    def erase_then_pause(*args: Any, **kwargs: Any) -> dict[str, Any]:
        done = erase(*args, **kwargs)
        time.sleep(pause)
        return done

    requests.erase_page = erase_then_pause  # type: ignore[assignment]


if os.environ.get("ULTIMAT3_SUBJECT_ERASE_WORKER") == "1":
    declare_subject_tables()
    _dawdle_after_each_erased_page()


# -- an import under SIGKILL (tests/process/test_import_kills.py) -----------------------------

IMPORT = "process.import"
IMPORT_JOB_ID = "00000000-0000-4000-8000-00000000f11e"
"""The ``job_id`` of every Effect row the import writes (one row per handled record)."""


def _load(records: list[Any]) -> None:
    """One Effect row per record (its label the record's number), between two pauses: a kill
    in the first loses the page, a kill in the second makes its replay handle it again."""
    from tests.testapp.models import Effect

    pause = float(os.environ.get("ULTIMAT3_IMPORT_PAUSE", "0.2"))
    time.sleep(pause / 2)
    Effect.objects.bulk_create(
        [
            Effect(job_id=IMPORT_JOB_ID, attempt=0, worker_pid=os.getpid(), label=str(r["n"]))
            for r in records
        ],
        batch_size=2000,
    )
    time.sleep(pause / 2)


def _parse_record(record: dict[str, Any]) -> dict[str, Any]:
    from ultimat3_jobs.errors import ImportRecordInvalid

    if not isinstance(record.get("n"), int):
        raise ImportRecordInvalid(field="n", rule="must be an integer")
    return record


def _declare_import() -> None:
    import tempfile

    from django.core.files.storage import FileSystemStorage

    from ultimat3_jobs.factories import import_rows

    import_rows(
        IMPORT,
        storage_path="in.jsonl",
        storage=FileSystemStorage(
            location=os.environ.get("ULTIMAT3_IMPORT_DIR", tempfile.gettempdir())
        ),
        handle=_load,
        parse=_parse_record,
        page_bytes=int(os.environ.get("ULTIMAT3_IMPORT_PAGE_BYTES", "65536")),
        max_record_bytes=4096,
        error_budget=3,
    )


_declare_import()


# -- a purge beside a drain (tests/process/test_purge_drain.py) -------------------------------

DRAIN = "process.drain"
PURGE = "process.purge"
PURGE_QUEUE = "purge"


@job(name=DRAIN, tenant="none", retry=Retry(attempts=3))
def drain(ctx: Any, *, n: int, pause: float = 0.0) -> int:
    """A job of the drain that runs beside the purge: one Effect row per run, then a pause."""
    from tests.testapp.models import Effect

    Effect.objects.create(
        job_id=ctx.job_id, attempt=ctx.attempt, worker_pid=os.getpid(), label="drain"
    )
    time.sleep(pause)
    return n


def _declare_purge() -> None:
    from ultimat3_jobs.factories import finished_jobs, purge

    retention = float(os.environ.get("ULTIMAT3_PURGE_RETENTION", "3600"))
    purge(
        PURGE,
        [
            finished_jobs(state, retention=retention)
            for state in ("completed", "failed", "cancelled")
        ],
        queue=PURGE_QUEUE,
        batch_size=int(os.environ.get("ULTIMAT3_PURGE_BATCH", "1000")),
    )


_declare_purge()
