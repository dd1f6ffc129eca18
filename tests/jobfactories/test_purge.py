"""``purge()``: a durable job, one step per target after one clock step, each target deleting
what is older than its retention in bounded batches; the default purge cron job; ``jobs purge
--dry-run``. On PostgreSQL, through ``run_enqueued``."""

from __future__ import annotations

import io
import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.factories import JobCounterFactory, JobFactory, OutboxEntryFactory
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.errors import JobDeclarationInvalid
from ultimat3_jobs.factories import (
    PurgeTarget,
    default_targets,
    expired_events,
    finished_jobs,
    old_counters,
    published_outbox,
    purge,
)
from ultimat3_jobs.factories.purge import plan, purge_declaration
from ultimat3_jobs.factories.retention import DEFAULT_PURGE_NAME
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.models import Job, JobCounter, JobStep, OutboxEntry
from ultimat3_jobs.testing import run_enqueued
from ultimat3_jobs.webhooks.ledger import add_endpoint
from ultimat3_jobs.webhooks.retention import webhook_deliveries
from ultimat3_jobs.webhooks.tables import WebhookDelivery

pytestmark = pytest.mark.django_db

HOUR = 3600.0

sweep = purge(
    "tests.factories.sweep",
    [
        finished_jobs("completed", retention=HOUR),
        finished_jobs("failed", retention=2 * HOUR),
        published_outbox(retention=HOUR),
        expired_events(),
        old_counters(retention=HOUR),
    ],
    batch_size=2,
)


def ago(hours: float) -> datetime:
    return datetime.now(UTC) - timedelta(hours=hours)


def test_a_pass_deletes_what_each_target_keeps_no_longer_and_nothing_live() -> None:
    old_done = [JobFactory(completed=True, finished_at=ago(2)).id for _ in range(5)]
    young_done = JobFactory(completed=True, finished_at=ago(0.5)).id
    failed = [JobFactory(failed=True, finished_at=ago(h)).id for h in (1.5, 3)]
    cancelled = JobFactory(cancelled=True, finished_at=ago(100)).id
    live = [JobFactory().id, JobFactory(running=True).id]
    OutboxEntryFactory(published=True, published_at=ago(2))
    kept_entry = OutboxEntryFactory().id
    JobCounterFactory(bucket=ago(3).replace(second=0, microsecond=0))
    get_driver().event_send(name="e", ttl_seconds=0)

    result = sweep.enqueue()
    summary = run_enqueued()
    assert summary.completed == (result.id,), summary.errors
    purge_job = Job.objects.get(id=result.id)
    assert purge_job.result == {
        "jobs.completed": 5,
        "jobs.failed": 1,
        "outbox": 1,
        "events": 1,
        "counters": 1,
    }
    left = set(Job.objects.values_list("id", flat=True))
    assert not left & set(old_done)
    assert {young_done, failed[0], cancelled, *live} <= left
    assert failed[1] not in left
    assert list(OutboxEntry.objects.values_list("id", flat=True)) == [kept_entry]
    assert JobCounter.objects.filter(bucket__lt=ago(2)).count() == 0
    steps = list(JobStep.objects.filter(job_id=result.id).order_by("seq").values_list("name"))
    assert [name for (name,) in steps] == [
        "clock",
        "target:jobs.completed",
        "target:jobs.failed",
        "target:outbox",
        "target:events",
        "target:counters",
    ]


def test_a_target_past_its_batches_leaves_the_rest_for_the_next_pass() -> None:
    bounded = purge(
        "tests.factories.bounded",
        [finished_jobs("completed", retention=0)],
        batch_size=2,
        max_batches=2,
    )
    for _ in range(5):
        JobFactory(completed=True, finished_at=ago(1))
    first = bounded.enqueue()
    run_enqueued()
    assert Job.objects.get(id=first.id).result == {"jobs.completed": 4}
    second = bounded.enqueue()
    run_enqueued()
    assert Job.objects.get(id=second.id).result == {"jobs.completed": 1}
    # The first pass's own job finished at the cutoff (one transaction, one now()): kept.
    assert Job.objects.filter(state="completed").count() == 2


def test_a_retention_of_none_keeps_rows_for_ever(settings) -> None:
    settings.ULTIMAT3_JOBS = {**settings.ULTIMAT3_JOBS, "RETENTION_CANCELLED_SECONDS": None}
    keeper = purge("tests.factories.keeper", [finished_jobs("cancelled")])
    kept = JobFactory(cancelled=True, finished_at=ago(10_000)).id
    result = keeper.enqueue()
    run_enqueued()
    assert Job.objects.get(id=result.id).result == {"jobs.cancelled": 0}
    assert Job.objects.filter(id=kept).exists()


def test_a_target_named_twice_is_refused() -> None:
    with pytest.raises(JobDeclarationInvalid, match=r"must not name a target twice.*jobs\.failed"):
        purge("tests.factories.twice", [finished_jobs("failed"), finished_jobs("failed")])
    assert "tests.factories.twice" not in registry


@pytest.mark.parametrize(
    ("targets", "options", "rule"),
    [
        ([], {}, "at least one target"),
        ("jobs.completed", {}, "list of PurgeTarget"),
        (["jobs.completed"], {}, "PurgeTarget values"),
        ([finished_jobs("completed")], {"batch_size": 0}, "batch_size must be an integer"),
        ([finished_jobs("completed")], {"batch_size": 10_001}, "batch_size must be an integer"),
        ([finished_jobs("completed")], {"max_batches": 0}, "max_batches"),
    ],
)
def test_a_bad_declaration_is_refused_naming_the_option(targets, options, rule) -> None:
    with pytest.raises(JobDeclarationInvalid, match=rule):
        purge("tests.factories.bad", targets, **options)


def test_a_target_name_must_be_a_step_name() -> None:
    target = PurgeTarget(
        name="Not A Name", retention=lambda: 0.0, delete=lambda c, n: 0, count=lambda c, n: 0
    )
    with pytest.raises(JobDeclarationInvalid, match="target name must match"):
        purge("tests.factories.badname", [target])


def test_the_default_purge_is_a_cron_job_over_every_built_in_target() -> None:
    handle = registry.get(DEFAULT_PURGE_NAME)
    schedule = handle.definition.schedule
    assert schedule is not None and (schedule.cron, schedule.tz) == ("*/15 * * * *", "UTC")
    declared = purge_declaration(DEFAULT_PURGE_NAME)
    assert [t.name for t in declared.targets] == [t.name for t in default_targets()] + ["webhooks"]
    assert [t.name for t in declared.targets] == [
        "jobs.completed",
        "jobs.failed",
        "jobs.cancelled",
        "outbox",
        "events",
        "counters",
        "webhooks",
    ]


def test_the_default_retentions_come_from_the_settings(settings) -> None:
    targets = {t.name: t for t in default_targets()}
    assert targets["jobs.completed"].retention() == 7 * 86400
    assert targets["jobs.failed"].retention() == 30 * 86400
    assert targets["outbox"].retention() == 86400
    assert webhook_deliveries().retention() == 30 * 86400
    settings.ULTIMAT3_JOBS = {**settings.ULTIMAT3_JOBS, "RETENTION_WEBHOOKS_SECONDS": None}
    assert webhook_deliveries().retention() is None
    settings.ULTIMAT3_JOBS = {**settings.ULTIMAT3_JOBS, "RETENTION_COMPLETED_SECONDS": 60}
    assert targets["jobs.completed"].retention() == 60.0


def test_the_dry_run_counts_and_deletes_nothing() -> None:
    for _ in range(3):
        JobFactory(completed=True, finished_at=ago(2))
    JobFactory(completed=True, finished_at=ago(0.1))
    rows = {row.target: row for row in plan(purge_declaration(sweep.name))}
    assert rows["jobs.completed"].rows == 3 and not rows["jobs.completed"].capped
    assert rows["jobs.failed"].rows == 0
    assert Job.objects.count() == 4
    out = io.StringIO()
    call_command("jobs", "purge", sweep.name, "--dry-run", stdout=out)
    text = out.getvalue()
    assert "dry run: nothing deleted" in text
    assert any(
        line.split()[0] == "jobs.completed" and line.endswith(" 3")
        for line in text.splitlines()[2:]
    )
    out = io.StringIO()
    call_command("jobs", "purge", sweep.name, "--dry-run", "--json", stdout=out)
    document = json.loads(out.getvalue())
    assert document["targets"][0] == {
        "target": "jobs.completed",
        "retention_seconds": HOUR,
        "cutoff": document["targets"][0]["cutoff"],
        "rows": 3,
        "capped": False,
    }
    assert Job.objects.count() == 4


def test_jobs_purge_enqueues_a_pass_and_refuses_an_unknown_name() -> None:
    out = io.StringIO()
    call_command("jobs", "purge", sweep.name, stdout=out)
    assert f"purge {sweep.name} enqueued" in out.getvalue()
    assert Job.objects.filter(name=sweep.name, state="queued").count() == 1
    with pytest.raises(CommandError, match="no purge is declared under 'nope'"):
        call_command("jobs", "purge", "nope", "--dry-run")


def test_the_webhooks_target_deletes_ledger_rows_past_their_retention_in_batches() -> None:
    endpoint = add_endpoint("tests-purge-hooks", "https://hooks.example.com/in")
    made = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(
            endpoint=endpoint,
            job_id=uuid.uuid4(),
            event_id=f"e{n}",
            event_type="t",
            attempt=1,
            status="succeeded",
        )
        for n in range(7)
    )
    young = made[-1].pk
    WebhookDelivery.objects.exclude(pk=young).update(created_at=ago(3))
    hooks = purge("tests.factories.hooks", [webhook_deliveries(retention=HOUR)], batch_size=2)
    rows = {row.target: row for row in plan(purge_declaration(hooks.name))}
    assert rows["webhooks"].rows == 6
    result = hooks.enqueue()
    run_enqueued()
    assert Job.objects.get(id=result.id).result == {"webhooks": 6}
    assert list(WebhookDelivery.objects.values_list("pk", flat=True)) == [young]
