"""The tables of durable steps, as Django models: ``x_job_steps`` (a job's stored steps) and
``x_job_events`` (events kept for the waits that race them).

Schema layer: ``models.py`` imports these models so that Django and its migrations see them;
this module imports nothing of the package but the core. Read and written through the drivers'
step methods (``drivers/steps_seam.py``), never the ORM, on the hot path.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.db.models.functions import Now

from ultimat3_jobs.types import STEP_KINDS, STEP_STATUSES


class JobStep(models.Model):
    """One step of a durable job: stored before the step returns, replayed by name."""

    pk = models.CompositePrimaryKey("job_id", "name")
    # ON DELETE CASCADE in the database: the drivers delete x_jobs rows with raw SQL.
    job = models.ForeignKey(
        "ultimat3_jobs.Job", on_delete=models.DB_CASCADE, related_name="+", db_index=False
    )
    name = models.CharField(max_length=200)
    seq = models.IntegerField()
    kind = models.CharField(max_length=8, choices=[(k, k) for k in STEP_KINDS])
    status = models.CharField(max_length=12, choices=[(s, s) for s in STEP_STATUSES])
    output = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    event = models.CharField(max_length=200, null=True, blank=True)
    # An event's key; "" for a wait on an event sent without one.
    key = models.CharField(max_length=200, null=True, blank=True)
    wait_since = models.DateTimeField(null=True, blank=True)
    wait_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "x_job_steps"
        indexes = (
            # event_send finds the waits an event ends, and nothing else.
            models.Index(
                fields=("event", "key"), name="x_job_steps_waiting", condition=Q(status="waiting")
            ),
        )
        constraints = (
            models.CheckConstraint(
                condition=Q(status__in=list(STEP_STATUSES)), name="x_job_steps_status_valid"
            ),
        )

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"


class JobEvent(models.Model):
    """An event sent for ``ctx.step.wait_for_event``, kept until it expires."""

    id = models.BigAutoField(primary_key=True)
    name = models.CharField(max_length=200)
    # "" for an event sent without a key: an equality the lookup index can seek.
    key = models.CharField(max_length=200, blank=True, default="", db_default="")
    payload = models.JSONField(null=True, blank=True)
    tenant_id = models.CharField(max_length=200, null=True, blank=True)
    created_at = models.DateTimeField(db_default=Now())
    expires_at = models.DateTimeField()

    class Meta:
        db_table = "x_job_events"
        indexes = (
            # A wait's lookup: its event and key, sent at or after the wait began.
            models.Index(fields=("name", "key", "created_at"), name="x_job_events_lookup"),
            # events_purge_expired: the oldest expiries first.
            models.Index(fields=("expires_at",), name="x_job_events_expiry"),
        )

    def __str__(self) -> str:
        return f"{self.name} {self.key or ''}".strip()
