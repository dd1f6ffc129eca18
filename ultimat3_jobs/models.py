"""The tables of ultimat3-jobs, as Django models. Migrations are generated from them.

The models describe the schema and serve the admin; the hot path does not go through the ORM. Each
model's manager is a raw-SQL entry point: ``Job.objects.db_manager(alias).run("job_claim", params)``
runs the named statement of ``drivers/postgres/sql/`` on that alias' connection. Only the
PostgreSQL driver calls it.
"""

from __future__ import annotations

from typing import Any

from django.db import connections, models
from django.db.models import Q
from django.db.models.functions import Now

from ultimat3_jobs.consumers.tables import ConsumerCursor  # noqa: F401  (a feature's table)
from ultimat3_jobs.drivers.postgres.queries import STATEMENTS
from ultimat3_jobs.lease_tables import JobLease  # noqa: F401  (the limits' table)
from ultimat3_jobs.models_ledger import Backfill  # noqa: F401 -- x_backfills, with the app
from ultimat3_jobs.step_tables import JobEvent, JobStep  # noqa: F401  (durable steps' tables)
from ultimat3_jobs.subjects.tables import SubjectRequest  # noqa: F401  (a feature's table)
from ultimat3_jobs.types import (
    FINISHED_STATES,
    LIVE_STATES,
    PAUSE_SCOPES,
    PRIORITY_MAX,
    PRIORITY_MIN,
    JobState,
)

# The tables of the features (webhooks, consumers, subject requests) live beside the feature
# that reads them; imported here for Django.
from ultimat3_jobs.webhooks.tables import WebhookDelivery, WebhookEndpoint  # noqa: F401

_LIVE = sorted(state.value for state in LIVE_STATES)
_FINISHED = sorted(state.value for state in FINISHED_STATES)


class RawStatementManager(models.Manager):  # type: ignore[type-arg]
    """Runs the named raw-SQL statements on this manager's database alias."""

    def run(self, statement: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """Execute ``statement`` (a name from ``sql/*.sql``) and answer the rows it returns
        (none for a statement without ``returning``)."""
        with connections[self.db].cursor() as cursor:
            cursor.execute(STATEMENTS[statement], params or {})
            if cursor.description is None:
                return []
            return list(cursor.fetchall())

    def run_rowcount(self, statement: str, params: dict[str, Any] | None = None) -> int:
        """Execute ``statement`` and answer how many rows it touched."""
        with connections[self.db].cursor() as cursor:
            cursor.execute(STATEMENTS[statement], params or {})
            return int(cursor.rowcount)


class Job(models.Model):
    """One job: a declared function's name, its input, and where it is in its life."""

    id = models.UUIDField(primary_key=True, editable=False)
    name = models.CharField(max_length=200)
    queue = models.CharField(max_length=63)
    state = models.CharField(
        max_length=16,
        choices=[(state.value, state.value) for state in JobState],
        default=JobState.QUEUED.value,
        db_default=JobState.QUEUED.value,
    )
    priority = models.SmallIntegerField(default=0, db_default=0)
    run_at = models.DateTimeField(db_default=Now())
    input = models.JSONField()
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)
    tenant_id = models.CharField(max_length=200, null=True, blank=True)
    enqueued_by = models.CharField(max_length=200, null=True, blank=True)
    attempt = models.IntegerField(default=0, db_default=0)
    max_attempts = models.IntegerField(default=3, db_default=3)
    lease_seconds = models.IntegerField(null=True, blank=True)
    claim_token = models.UUIDField(null=True, blank=True)
    worker_id = models.CharField(max_length=200, null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    progress = models.JSONField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True)
    errors = models.JSONField(default=list, db_default=[], blank=True)
    traceparent = models.CharField(max_length=55, null=True, blank=True)
    created_at = models.DateTimeField(db_default=Now())
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Set by a worker whose claimed body waits for a thread; reset by the claim. The rescuer
    # gives such an attempt back instead of counting it.
    body_pending = models.BooleanField(default=False, db_default=False)
    # Set while the job's name is paused (by the pause, and by an enqueue that sees the pause);
    # cleared by the resume. Keeps a paused name's backlog out of x_jobs_claim, so the claim
    # never walks it. The claim still reads x_job_pauses: a row that missed the flag waits too.
    paused = models.BooleanField(default=False, db_default=False)

    objects = RawStatementManager()

    class Meta:
        db_table = "x_jobs"
        ordering = ("-created_at",)
        indexes = (
            # The claim seeks this index per queue and priority, in claim order, and stops after
            # N rows or at now(); a paused name's rows are not in it.
            models.Index(
                fields=("queue", "-priority", "run_at"),
                name="x_jobs_claim",
                condition=Q(state=JobState.QUEUED.value, paused=False),
            ),
            # The resume finds the rows its pause flagged, and nothing else.
            models.Index(fields=("name",), name="x_jobs_paused", condition=Q(paused=True)),
            # The rescuer's scan: only running rows, by when their lease ends.
            models.Index(
                fields=("lease_expires_at",),
                name="x_jobs_lease",
                condition=Q(state=JobState.RUNNING.value),
            ),
            # The operator's reads of finished jobs by name (queue_stats, job_requeue_failed).
            # Finished rows only: a full index would take an entry at every state change, the
            # claim's and the enqueue's too (no update of x_jobs is HOT: state is in predicates).
            models.Index(
                fields=("name", "state"),
                name="x_jobs_name_finished",
                condition=Q(state__in=_FINISHED),
            ),
            # The purge's delete: one finished state, oldest finish first; no live row in it.
            models.Index(
                fields=("state", "finished_at"),
                name="x_jobs_finished",
                condition=Q(state__in=_FINISHED),
            ),
            # The operator's list and the admin's changelist: newest first, keyset by id.
            models.Index(fields=("-created_at", "-id"), name="x_jobs_newest"),
            # The admin's search by idempotency key and its tenant filter: an equality, then the
            # changelist's order, so a page is an index range whatever the table holds.
            models.Index(
                fields=("idempotency_key", "-created_at", "-id"),
                name="x_jobs_key_search",
                condition=Q(idempotency_key__isnull=False),
            ),
            models.Index(
                fields=("tenant_id", "-created_at", "-id"),
                name="x_jobs_tenant",
                condition=Q(tenant_id__isnull=False),
            ),
        )
        constraints = (
            # One live job per (name, idempotency key); a finished job frees its key.
            models.UniqueConstraint(
                fields=("name", "idempotency_key"),
                name="x_jobs_live_key",
                condition=Q(idempotency_key__isnull=False, state__in=_LIVE),
            ),
            models.CheckConstraint(
                condition=Q(state__in=[state.value for state in JobState]),
                name="x_jobs_state_valid",
            ),
            models.CheckConstraint(
                condition=Q(priority__gte=PRIORITY_MIN, priority__lte=PRIORITY_MAX),
                name="x_jobs_priority_range",
            ),
            models.CheckConstraint(
                condition=Q(attempt__gte=0, max_attempts__gte=1), name="x_jobs_attempts_valid"
            ),
        )
        permissions = (
            ("view_job_input", "Can see job input unredacted"),
            ("cancel_job", "Can cancel jobs"),
            ("requeue_job", "Can requeue jobs"),
            ("promote_job", "Can run jobs now"),
            ("remove_job", "Can remove jobs"),
            ("pause_queue", "Can pause and resume queues and job names"),
            ("release_lease", "Can release a stuck concurrency lease"),
        )

    def __str__(self) -> str:
        return f"{self.name} {self.id} ({self.state})"


class JobPause(models.Model):
    """A paused queue, job name or cron (scope ``task``). The claim reads this table; a paused
    target's jobs stay queued."""

    scope = models.CharField(max_length=16, choices=[(scope, scope) for scope in PAUSE_SCOPES])
    target = models.CharField(max_length=200)
    paused_by = models.CharField(max_length=200, blank=True, default="", db_default="")
    reason = models.TextField(blank=True, default="", db_default="")
    created_at = models.DateTimeField(db_default=Now())

    objects = RawStatementManager()

    class Meta:
        db_table = "x_job_pauses"
        constraints = (
            models.UniqueConstraint(fields=("scope", "target"), name="x_job_pauses_target"),
            models.CheckConstraint(
                condition=Q(scope__in=list(PAUSE_SCOPES)), name="x_job_pauses_scope_valid"
            ),
        )

    def __str__(self) -> str:
        return f"{self.scope} {self.target}"


class JobWorker(models.Model):
    """A live worker process; its row expires unless its heartbeat renews it."""

    id = models.CharField(max_length=200, primary_key=True)
    host = models.CharField(max_length=255)
    pid = models.IntegerField()
    queues = models.JSONField(default=list, db_default=[])
    slots = models.IntegerField(default=0, db_default=0)
    demand = models.JSONField(default=dict, db_default={})
    # Jobs this worker shed and refused for their limits since it started, per job name:
    # {"shed": {name: n}, "refused": {name: n}} (the metrics sum them over live workers).
    limits = models.JSONField(default=dict, db_default={})
    started_at = models.DateTimeField(db_default=Now())
    heartbeat_at = models.DateTimeField(db_default=Now())
    expires_at = models.DateTimeField()

    objects = RawStatementManager()

    class Meta:
        db_table = "x_job_workers"

    def __str__(self) -> str:
        return self.id


class JobCounter(models.Model):
    """How many attempts of one job name settled each way, in one minute or one hour."""

    name = models.CharField(max_length=200)
    period = models.CharField(max_length=8, choices=[("minute", "minute"), ("hour", "hour")])
    bucket = models.DateTimeField()
    completed = models.IntegerField(default=0, db_default=0)
    retried = models.IntegerField(default=0, db_default=0)
    dead = models.IntegerField(default=0, db_default=0)
    dropped = models.IntegerField(default=0, db_default=0)
    refused = models.IntegerField(default=0, db_default=0)
    cancelled = models.IntegerField(default=0, db_default=0)

    objects = RawStatementManager()

    class Meta:
        db_table = "x_job_counters"
        constraints = (
            models.UniqueConstraint(
                fields=("name", "period", "bucket"), name="x_job_counters_bucket"
            ),
            models.CheckConstraint(
                condition=Q(period__in=["minute", "hour"]), name="x_job_counters_period_valid"
            ),
        )

    def __str__(self) -> str:
        return f"{self.name} {self.period} {self.bucket:%Y-%m-%d %H:%M}"


class OutboxEntry(models.Model):
    """A job staged inside the caller's transaction, for the relay to publish after commit.

    Lives in the caller's own database; its id is the job's id, so a staged enqueue answers the
    real id and a repeated publish is answered ``deduped``."""

    id = models.UUIDField(primary_key=True, editable=False)
    name = models.CharField(max_length=200)
    queue = models.CharField(max_length=63)
    priority = models.SmallIntegerField(default=0, db_default=0)
    run_at = models.DateTimeField()
    input = models.JSONField()
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)
    tenant_id = models.CharField(max_length=200, null=True, blank=True)
    enqueued_by = models.CharField(max_length=200, null=True, blank=True)
    max_attempts = models.IntegerField(default=3, db_default=3)
    lease_seconds = models.IntegerField(null=True, blank=True)
    traceparent = models.CharField(max_length=55, null=True, blank=True)
    created_at = models.DateTimeField(db_default=Now())
    relay_id = models.CharField(max_length=200, null=True, blank=True)
    relay_lease_expires_at = models.DateTimeField(null=True, blank=True)
    publish_attempts = models.IntegerField(default=0, db_default=0)
    last_error = models.TextField(blank=True, default="", db_default="")
    published_at = models.DateTimeField(null=True, blank=True)

    objects = RawStatementManager()

    class Meta:
        db_table = "x_outbox"
        ordering = ("created_at",)
        indexes = (
            # The relay's claim: unpublished rows, oldest first.
            models.Index(
                fields=("created_at", "id"),
                name="x_outbox_pending",
                condition=Q(published_at__isnull=True),
            ),
            # The retention sweep: published rows by when they were published.
            models.Index(
                fields=("published_at",),
                name="x_outbox_published",
                condition=Q(published_at__isnull=False),
            ),
        )

    def __str__(self) -> str:
        return f"{self.name} {self.id} ({'published' if self.published_at else 'staged'})"


class SchedulerTask(models.Model):
    """Per cron (the model and table keep their first name): the last occurrence dealt with
    (the watermark, fired or skipped) and the last one that dispatched a job. An occurrence
    fires in one statement fenced by the watermark, so no occurrence fires twice."""

    name = models.CharField(max_length=200, primary_key=True)
    watermark = models.DateTimeField()
    last_fire_at = models.DateTimeField(null=True, blank=True)
    last_job_id = models.UUIDField(null=True, blank=True)
    created_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(db_default=Now())

    objects = RawStatementManager()

    class Meta:
        db_table = "x_scheduler_tasks"
        # The seed's table name stays; people read the rows as cron jobs.
        verbose_name = "cron job"
        verbose_name_plural = "cron jobs"

    def __str__(self) -> str:
        return self.name


class SchedulerLeader(models.Model):
    """The scheduler's leader lease: who holds it, until when, and its epoch (bumped on every
    change of holder, so a fire can be fenced by it)."""

    name = models.CharField(max_length=100, primary_key=True)
    holder = models.CharField(max_length=200)
    epoch = models.BigIntegerField(default=1, db_default=1)
    expires_at = models.DateTimeField()

    objects = RawStatementManager()

    class Meta:
        db_table = "x_scheduler_leaders"

    def __str__(self) -> str:
        return f"{self.name}: {self.holder}"
