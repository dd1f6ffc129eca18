"""The factories' ledger tables, as Django models (imported by ``models.py``, which would grow
past its size with them): ``x_backfills``, what each backfill run swept.

Like every model, read through the PostgreSQL driver's named statements (``sql/backfills.sql``),
never the ORM, on the hot path."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.db.models.functions import Now

BACKFILL_STATUSES = ("running", "completed", "failed")


class Backfill(models.Model):
    """One run of a declared backfill: its name and scope (the ledger key), the job that runs
    it, the environment it ran in, where it stands, the last cursor it stored and how many rows
    it swept. Only a ``completed`` run blocks a new run of the same name and scope."""

    id = models.BigAutoField(primary_key=True)
    name = models.CharField(max_length=200)
    scope = models.CharField(max_length=200)
    run_id = models.UUIDField(unique=True)
    environment = models.CharField(max_length=100, blank=True, default="", db_default="")
    status = models.CharField(max_length=12, choices=[(s, s) for s in BACKFILL_STATUSES])
    cursor = models.JSONField(null=True, blank=True)
    rows_done = models.BigIntegerField(default=0, db_default=0)
    batches_done = models.IntegerField(default=0, db_default=0)
    error = models.TextField(blank=True, default="", db_default="")
    started_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(db_default=Now())
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "ultimat3_jobs"
        db_table = "x_backfills"
        indexes = (models.Index(fields=("name", "scope"), name="x_backfills_key"),)
        constraints = (
            # One completed run per name and scope: what blocks a new run.
            models.UniqueConstraint(
                fields=("name", "scope"),
                name="x_backfills_completed",
                condition=Q(status="completed"),
            ),
            models.CheckConstraint(
                condition=Q(status__in=list(BACKFILL_STATUSES)), name="x_backfills_status_valid"
            ),
        )

    def __str__(self) -> str:
        return f"{self.name}:{self.scope} ({self.status})"
