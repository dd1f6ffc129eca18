"""Rows the test jobs write, so tests can check effects from the database."""

from __future__ import annotations

from django.db import models


class Effect(models.Model):
    """One run of a recording job's body: which job, which attempt, which process."""

    job_id = models.UUIDField()
    attempt = models.IntegerField()
    worker_pid = models.IntegerField()
    label = models.CharField(max_length=100, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = (models.Index(fields=("job_id",), name="testapp_effect_job"),)

    def __str__(self) -> str:
        return f"{self.job_id} #{self.attempt}"


class SweepRow(models.Model):
    """A row a backfill sweeps: ``handled`` counts the ``handle`` calls that saw it."""

    handled = models.IntegerField(default=0)
    done = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"{self.pk} x{self.handled}"
