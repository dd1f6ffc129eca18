"""The table of limits: ``x_job_leases``, one row per held concurrency slot or spent rate stamp
(see ``drivers/leases_seam.py``). An expired row is a free slot.

Schema layer: ``models.py`` imports this model so that Django and its migrations see it; this
module imports nothing of the package.
"""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now

LEASE_KINDS = ("concurrency", "rate")


class JobLease(models.Model):
    """A held concurrency slot or a spent rate stamp (``kind``). No foreign key to the job: a
    rate stamp stays spent after its job's row is gone."""

    pk = models.CompositePrimaryKey("key", "slot")
    key = models.CharField(max_length=600)
    slot = models.IntegerField()
    kind = models.CharField(max_length=12, choices=[(kind, kind) for kind in LEASE_KINDS])
    # The settle, heartbeat and rescue statements find an attempt's slots by its job.
    job_id = models.UUIDField(db_index=True)
    claim_token = models.UUIDField()
    acquired_at = models.DateTimeField(db_default=Now())
    expires_at = models.DateTimeField()

    class Meta:
        db_table = "x_job_leases"

    def __str__(self) -> str:
        return f"{self.key} #{self.slot}"
