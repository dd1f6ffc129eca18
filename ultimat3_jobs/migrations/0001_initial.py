"""Every table of ultimat3-jobs but the outbox (``0002_outbox``), as 0.1.0 ships them.

The migrations ``0001`` to ``0016`` written before the first release, squashed: ``replaces``
names the ones this one stands for besides ``0001_initial`` and ``0002_outbox`` (which keep their
names), so a database they migrated counts it as applied and ``migrate`` runs nothing there.
The columns stand in the order those migrations created them (``x_jobs.body_pending`` and
``paused``, ``x_job_workers.limits`` and the foreign keys last): both ways give the same tables.

Written by hand, not by ``makemigrations``: the helpers below build exactly the fields and
options it writes, and belong to this migration (a later migration writes out its own)."""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models.functions import Now

JOB_STATES = ("queued", "running", "completed", "failed", "cancelled")
FINISHED_STATES = ["cancelled", "completed", "failed"]
STEP_STATUSES = ("started", "done", "waiting", "compensated")
DELIVERY_STATUSES = ("succeeded", "failed", "refused")
REQUEST_KINDS = ("export", "erase")
REQUEST_STATES = ("queued", "running", "done", "failed")
BACKFILL_STATUSES = ("running", "completed", "failed")
COUNTER_PERIODS = ("minute", "hour")
PAUSE_SCOPES = ("queue", "job", "task")

NULLABLE = {"blank": True, "null": True}
"""The options of a column that may be NULL (and left blank in a form)."""


def stamped():
    """A timestamp the database writes at insert."""
    return models.DateTimeField(db_default=Now())


def counted(field_class=models.IntegerField, start=0):
    """A number that starts at ``start``, in Python and in the database."""
    return field_class(db_default=start, default=start)


def unset_text(field_class=models.TextField, **options):
    """A text column that starts empty, in Python and in the database."""
    return field_class(blank=True, db_default="", default="", **options)


def one_of(values, max_length, **options):
    """A CharField of ``values``, each its own label."""
    return models.CharField(choices=[(v, v) for v in values], max_length=max_length, **options)


def holds_one_of(column, values, name):
    """The CHECK constraint ``name``: ``column`` holds one of ``values``."""
    return models.CheckConstraint(condition=models.Q((f"{column}__in", list(values))), name=name)


def cascading_key(to, related_name):
    """A foreign key without an index of its own, whose rows the database deletes with the row
    they point to (ON DELETE CASCADE)."""
    return models.ForeignKey(
        db_index=False,
        on_delete=django.db.models.deletion.DB_CASCADE,
        related_name=related_name,
        to=to,
    )


def table(name, db_table, fields, **options):
    """The CreateModel of the model ``name``, on the table ``db_table``."""
    return migrations.CreateModel(
        name=name, fields=fields, options={"db_table": db_table, **options}
    )


def implicit_id():
    """The ``id`` Django gives a model that declares no primary key."""
    return models.BigAutoField(
        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
    )


class Migration(migrations.Migration):
    initial = True

    replaces = [
        ("ultimat3_jobs", "0003_scheduler"),
        ("ultimat3_jobs", "0004_newest_index"),
        ("ultimat3_jobs", "0006_rescue_policy"),
        ("ultimat3_jobs", "0007_search_indexes"),
        ("ultimat3_jobs", "0008_claimable_index"),
        ("ultimat3_jobs", "0009_cron_job_labels"),
        ("ultimat3_jobs", "0010_steps_events"),
        ("ultimat3_jobs", "0011_webhooks"),
        ("ultimat3_jobs", "0012_consumers_subjects"),
        ("ultimat3_jobs", "0013_leases"),
        ("ultimat3_jobs", "0014_backfills"),
        ("ultimat3_jobs", "0015_lease_operator"),
        ("ultimat3_jobs", "0016_name_finished_index"),
    ]

    dependencies = []

    operations = [
        table(
            "JobWorker",
            "x_job_workers",
            [
                ("id", models.CharField(max_length=200, primary_key=True, serialize=False)),
                ("host", models.CharField(max_length=255)),
                ("pid", models.IntegerField()),
                ("queues", models.JSONField(db_default=[], default=list)),
                ("slots", counted()),
                ("demand", models.JSONField(db_default={}, default=dict)),
                ("started_at", stamped()),
                ("heartbeat_at", stamped()),
                ("expires_at", models.DateTimeField()),
                ("limits", models.JSONField(db_default={}, default=dict)),
            ],
        ),
        table(
            "Job",
            "x_jobs",
            [
                ("id", models.UUIDField(editable=False, primary_key=True, serialize=False)),
                ("name", models.CharField(max_length=200)),
                ("queue", models.CharField(max_length=63)),
                ("state", one_of(JOB_STATES, 16, db_default="queued", default="queued")),
                ("priority", counted(models.SmallIntegerField)),
                ("run_at", stamped()),
                ("input", models.JSONField()),
                ("idempotency_key", models.CharField(max_length=255, **NULLABLE)),
                ("tenant_id", models.CharField(max_length=200, **NULLABLE)),
                ("enqueued_by", models.CharField(max_length=200, **NULLABLE)),
                ("attempt", counted()),
                ("max_attempts", counted(start=3)),
                ("lease_seconds", models.IntegerField(**NULLABLE)),
                ("claim_token", models.UUIDField(**NULLABLE)),
                ("worker_id", models.CharField(max_length=200, **NULLABLE)),
                ("lease_expires_at", models.DateTimeField(**NULLABLE)),
                ("progress", models.JSONField(**NULLABLE)),
                ("result", models.JSONField(**NULLABLE)),
                ("errors", models.JSONField(blank=True, db_default=[], default=list)),
                ("traceparent", models.CharField(max_length=55, **NULLABLE)),
                ("created_at", stamped()),
                ("started_at", models.DateTimeField(**NULLABLE)),
                ("finished_at", models.DateTimeField(**NULLABLE)),
                ("body_pending", models.BooleanField(db_default=False, default=False)),
                ("paused", models.BooleanField(db_default=False, default=False)),
            ],
            ordering=("-created_at",),
            # Job.Meta.permissions, written as makemigrations writes them.
            permissions=(("view_job_input", "Can see job input unredacted"), ("cancel_job", "Can cancel jobs"), ("requeue_job", "Can requeue jobs"), ("promote_job", "Can run jobs now"), ("remove_job", "Can remove jobs"), ("pause_queue", "Can pause and resume queues and job names"), ("release_lease", "Can release a stuck concurrency lease")),
            indexes=[
                models.Index(
                    condition=models.Q(("paused", False), ("state", "queued")),
                    fields=["queue", "-priority", "run_at"],
                    name="x_jobs_claim",
                ),
                models.Index(
                    condition=models.Q(("paused", True)), fields=["name"], name="x_jobs_paused"
                ),
                models.Index(
                    condition=models.Q(("state", "running")),
                    fields=["lease_expires_at"],
                    name="x_jobs_lease",
                ),
                models.Index(
                    condition=models.Q(("state__in", FINISHED_STATES)),
                    fields=["name", "state"],
                    name="x_jobs_name_finished",
                ),
                models.Index(
                    condition=models.Q(("state__in", FINISHED_STATES)),
                    fields=["state", "finished_at"],
                    name="x_jobs_finished",
                ),
                models.Index(fields=["-created_at", "-id"], name="x_jobs_newest"),
                models.Index(
                    condition=models.Q(("idempotency_key__isnull", False)),
                    fields=["idempotency_key", "-created_at", "-id"],
                    name="x_jobs_key_search",
                ),
                models.Index(
                    condition=models.Q(("tenant_id__isnull", False)),
                    fields=["tenant_id", "-created_at", "-id"],
                    name="x_jobs_tenant",
                ),
            ],
            constraints=[
                models.UniqueConstraint(
                    condition=models.Q(
                        ("idempotency_key__isnull", False), ("state__in", ["queued", "running"])
                    ),
                    fields=("name", "idempotency_key"),
                    name="x_jobs_live_key",
                ),
                holds_one_of("state", JOB_STATES, "x_jobs_state_valid"),
                models.CheckConstraint(
                    condition=models.Q(("priority__gte", -100), ("priority__lte", 100)),
                    name="x_jobs_priority_range",
                ),
                models.CheckConstraint(
                    condition=models.Q(("attempt__gte", 0), ("max_attempts__gte", 1)),
                    name="x_jobs_attempts_valid",
                ),
            ],
        ),
        table(
            "JobCounter",
            "x_job_counters",
            [
                ("id", implicit_id()),
                ("name", models.CharField(max_length=200)),
                ("period", one_of(COUNTER_PERIODS, 8)),
                ("bucket", models.DateTimeField()),
                ("completed", counted()),
                ("retried", counted()),
                ("dead", counted()),
                ("dropped", counted()),
                ("refused", counted()),
                ("cancelled", counted()),
            ],
            constraints=[
                models.UniqueConstraint(
                    fields=("name", "period", "bucket"), name="x_job_counters_bucket"
                ),
                holds_one_of("period", COUNTER_PERIODS, "x_job_counters_period_valid"),
            ],
        ),
        table(
            "JobPause",
            "x_job_pauses",
            [
                ("id", implicit_id()),
                ("scope", one_of(PAUSE_SCOPES, 16)),
                ("target", models.CharField(max_length=200)),
                ("paused_by", unset_text(models.CharField, max_length=200)),
                ("reason", unset_text()),
                ("created_at", stamped()),
            ],
            constraints=[
                models.UniqueConstraint(fields=("scope", "target"), name="x_job_pauses_target"),
                holds_one_of("scope", PAUSE_SCOPES, "x_job_pauses_scope_valid"),
            ],
        ),
        table(
            "SchedulerLeader",
            "x_scheduler_leaders",
            [
                ("name", models.CharField(max_length=100, primary_key=True, serialize=False)),
                ("holder", models.CharField(max_length=200)),
                ("epoch", counted(models.BigIntegerField, start=1)),
                ("expires_at", models.DateTimeField()),
            ],
        ),
        table(
            "SchedulerTask",
            "x_scheduler_tasks",
            [
                ("name", models.CharField(max_length=200, primary_key=True, serialize=False)),
                ("watermark", models.DateTimeField()),
                ("last_fire_at", models.DateTimeField(**NULLABLE)),
                ("last_job_id", models.UUIDField(**NULLABLE)),
                ("created_at", stamped()),
                ("updated_at", stamped()),
            ],
            verbose_name="cron job",
            verbose_name_plural="cron jobs",
        ),
        table(
            "JobEvent",
            "x_job_events",
            [
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("name", models.CharField(max_length=200)),
                ("key", unset_text(models.CharField, max_length=200)),
                ("payload", models.JSONField(**NULLABLE)),
                ("tenant_id", models.CharField(max_length=200, **NULLABLE)),
                ("created_at", stamped()),
                ("expires_at", models.DateTimeField()),
            ],
            indexes=[
                models.Index(fields=["name", "key", "created_at"], name="x_job_events_lookup"),
                models.Index(fields=["expires_at"], name="x_job_events_expiry"),
            ],
        ),
        table(
            "JobStep",
            "x_job_steps",
            [
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "job_id",
                        "name",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                ("name", models.CharField(max_length=200)),
                ("seq", models.IntegerField()),
                ("kind", one_of(("run", "once", "sleep", "event"), 8)),
                ("status", one_of(STEP_STATUSES, 12)),
                ("output", models.JSONField(**NULLABLE)),
                ("error", models.JSONField(**NULLABLE)),
                ("event", models.CharField(max_length=200, **NULLABLE)),
                ("key", models.CharField(max_length=200, **NULLABLE)),
                ("wait_since", models.DateTimeField(**NULLABLE)),
                ("wait_until", models.DateTimeField(**NULLABLE)),
                ("created_at", stamped()),
                ("updated_at", stamped()),
                ("job", cascading_key("ultimat3_jobs.job", related_name="+")),
            ],
            indexes=[
                models.Index(
                    condition=models.Q(("status", "waiting")),
                    fields=["event", "key"],
                    name="x_job_steps_waiting",
                )
            ],
            constraints=[holds_one_of("status", STEP_STATUSES, "x_job_steps_status_valid")],
        ),
        table(
            "WebhookEndpoint",
            "x_webhook_endpoints",
            [
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("name", models.CharField(max_length=100, unique=True)),
                ("url", models.CharField(max_length=2000)),
                ("tenant_id", models.CharField(max_length=200, **NULLABLE)),
                ("secret", models.CharField(max_length=200)),
                ("previous_secret", unset_text(models.CharField, max_length=200)),
                ("previous_secret_until", models.DateTimeField(**NULLABLE)),
                ("enabled", models.BooleanField(db_default=True, default=True)),
                ("consecutive_failures", counted()),
                ("disabled_at", models.DateTimeField(**NULLABLE)),
                ("disabled_reason", unset_text(models.CharField, max_length=200)),
                ("created_at", stamped()),
            ],
            permissions=(
                ("disable_webhookendpoint", "Can disable a webhook endpoint"),
                ("enable_webhookendpoint", "Can enable a webhook endpoint"),
                ("rotate_webhookendpoint_secret", "Can rotate a webhook endpoint's secret"),
            ),
        ),
        table(
            "WebhookDelivery",
            "x_webhook_deliveries",
            [
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("job_id", models.UUIDField()),
                ("event_id", models.CharField(max_length=100)),
                ("event_type", models.CharField(max_length=200)),
                ("attempt", models.IntegerField()),
                ("status", one_of(DELIVERY_STATUSES, 12)),
                ("response_code", models.SmallIntegerField(**NULLABLE)),
                ("duration_ms", models.IntegerField(**NULLABLE)),
                ("response_excerpt", unset_text()),
                ("error", unset_text()),
                ("created_at", stamped()),
                (
                    "endpoint",
                    cascading_key("ultimat3_jobs.webhookendpoint", related_name="deliveries"),
                ),
            ],
            indexes=[
                models.Index(fields=["endpoint", "-id"], name="x_webhook_deliveries_endpoint"),
                models.Index(fields=["job_id"], name="x_webhook_deliveries_job"),
            ],
            constraints=[
                holds_one_of("status", DELIVERY_STATUSES, "x_webhook_deliveries_status_valid")
            ],
        ),
        table(
            "ConsumerCursor",
            "x_consumer_cursors",
            [
                ("name", models.CharField(max_length=100, primary_key=True, serialize=False)),
                ("cursor", models.JSONField(**NULLABLE)),
                ("handled", counted(models.BigIntegerField)),
                ("turns", counted(models.BigIntegerField)),
                ("created_at", stamped()),
                ("moved_at", models.DateTimeField(**NULLABLE)),
            ],
        ),
        table(
            "SubjectRequest",
            "x_subject_requests",
            [
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("kind", one_of(REQUEST_KINDS, 6)),
                ("subject_digest", models.CharField(max_length=64)),
                ("requested_by", models.CharField(max_length=200)),
                ("requested_at", stamped()),
                ("state", one_of(REQUEST_STATES, 8, default="queued")),
                ("job_id", models.UUIDField(**NULLABLE)),
                ("plan", models.JSONField(blank=True, default=list)),
                ("counts", models.JSONField(blank=True, default=dict)),
                ("documents", models.JSONField(blank=True, default=dict)),
                ("storage", models.CharField(blank=True, default="", max_length=100)),
                ("finished_at", models.DateTimeField(**NULLABLE)),
                ("error", models.TextField(blank=True, default="")),
            ],
            indexes=[models.Index(fields=["subject_digest"], name="x_subject_requests_digest")],
            constraints=[
                holds_one_of("kind", REQUEST_KINDS, "x_subject_requests_kind_valid"),
                holds_one_of("state", REQUEST_STATES, "x_subject_requests_state_valid"),
            ],
        ),
        table(
            "JobLease",
            "x_job_leases",
            [
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "key", "slot", blank=True, editable=False, primary_key=True, serialize=False
                    ),
                ),
                ("key", models.CharField(max_length=600)),
                ("slot", models.IntegerField()),
                ("kind", one_of(("concurrency", "rate"), 12)),
                ("job_id", models.UUIDField(db_index=True)),
                ("claim_token", models.UUIDField()),
                ("acquired_at", stamped()),
                ("expires_at", models.DateTimeField()),
            ],
        ),
        table(
            "Backfill",
            "x_backfills",
            [
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("name", models.CharField(max_length=200)),
                ("scope", models.CharField(max_length=200)),
                ("run_id", models.UUIDField(unique=True)),
                ("environment", unset_text(models.CharField, max_length=100)),
                ("status", one_of(BACKFILL_STATUSES, 12)),
                ("cursor", models.JSONField(**NULLABLE)),
                ("rows_done", counted(models.BigIntegerField)),
                ("batches_done", counted()),
                ("error", unset_text()),
                ("started_at", stamped()),
                ("updated_at", stamped()),
                ("finished_at", models.DateTimeField(**NULLABLE)),
            ],
            indexes=[models.Index(fields=["name", "scope"], name="x_backfills_key")],
            constraints=[
                models.UniqueConstraint(
                    condition=models.Q(("status", "completed")),
                    fields=("name", "scope"),
                    name="x_backfills_completed",
                ),
                holds_one_of("status", BACKFILL_STATUSES, "x_backfills_status_valid"),
            ],
        ),
    ]
