"""The audit of subject requests: one row per export or erase, saying who asked, when, what it
reached and how it ended. Never the subject's data, never the subject id itself: a keyed digest
of it, so an operator holding the id can find its requests.

Schema layer: ``models.py`` imports this model so that Django (and its migrations) sees it.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.db.models.functions import Now

REQUEST_KINDS = ("export", "erase")
REQUEST_STATES = ("queued", "running", "done", "failed")


class SubjectRequest(models.Model):
    """One export or erase of one data subject."""

    id = models.BigAutoField(primary_key=True)
    kind = models.CharField(max_length=6, choices=[(k, k) for k in REQUEST_KINDS])
    # HMAC-SHA256 of the subject id under SECRET_KEY (see subjects.requests.subject_digest).
    subject_digest = models.CharField(max_length=64)
    requested_by = models.CharField(max_length=200)
    requested_at = models.DateTimeField(db_default=Now())
    state = models.CharField(
        max_length=8, choices=[(s, s) for s in REQUEST_STATES], default="queued"
    )
    job_id = models.UUIDField(null=True, blank=True)
    # The tables the plan reached, in order, each with its count of rows at planning time.
    plan = models.JSONField(default=list, blank=True)
    # Rows exported, deleted or anonymized, per table label.
    counts = models.JSONField(default=dict, blank=True)
    # An export's storage names, per table label.
    documents = models.JSONField(default=dict, blank=True)
    storage = models.CharField(max_length=100, blank=True, default="")
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, default="")

    class Meta:
        db_table = "x_subject_requests"
        indexes = (models.Index(fields=("subject_digest",), name="x_subject_requests_digest"),)
        constraints = (
            models.CheckConstraint(
                condition=Q(kind__in=list(REQUEST_KINDS)), name="x_subject_requests_kind_valid"
            ),
            models.CheckConstraint(
                condition=Q(state__in=list(REQUEST_STATES)),
                name="x_subject_requests_state_valid",
            ),
        )

    def __str__(self) -> str:
        return f"{self.kind} #{self.id} ({self.state})"
