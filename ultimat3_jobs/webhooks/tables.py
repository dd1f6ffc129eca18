"""The tables of webhooks: the endpoints deliveries go to, and the ledger of every attempt.

Schema layer: ``models.py`` imports these models so that Django and its migrations see them;
this module imports nothing of the package but the core.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.db.models.functions import Now

DELIVERY_STATUSES = ("succeeded", "failed", "refused")
"""How one attempt ended: the endpoint answered 2xx; it answered otherwise or could not be
reached (retried); or no request was sent (the endpoint disabled, the destination refused, a
tenant mismatch)."""


class WebhookEndpoint(models.Model):
    """Where deliveries of one name go: a URL, its signing secret(s), its tenant and health."""

    id = models.BigAutoField(primary_key=True)
    name = models.CharField(max_length=100, unique=True)
    url = models.CharField(max_length=2000)
    # NULL: an endpoint of a single-tenant project (or of no tenant in particular).
    tenant_id = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    secret = models.CharField(max_length=200)
    # The secret before the last rotation; deliveries are signed with both until it expires.
    previous_secret = models.CharField(max_length=200, blank=True, default="", db_default="")
    previous_secret_until = models.DateTimeField(null=True, blank=True)
    enabled = models.BooleanField(default=True, db_default=True)
    consecutive_failures = models.IntegerField(default=0, db_default=0)
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.CharField(max_length=200, blank=True, default="", db_default="")
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "x_webhook_endpoints"
        permissions = (
            ("disable_webhookendpoint", "Can disable a webhook endpoint"),
            ("enable_webhookendpoint", "Can enable a webhook endpoint"),
            ("rotate_webhookendpoint_secret", "Can rotate a webhook endpoint's secret"),
        )

    def __str__(self) -> str:
        return self.name


class WebhookDelivery(models.Model):
    """One attempt to deliver one event to one endpoint, written before the attempt's outcome
    is raised. Never the payload, never the secret."""

    id = models.BigAutoField(primary_key=True)
    # ON DELETE CASCADE in the database: removing an endpoint removes its ledger.
    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.DB_CASCADE, related_name="deliveries", db_index=False
    )
    job_id = models.UUIDField()
    event_id = models.CharField(max_length=100)
    event_type = models.CharField(max_length=200)
    attempt = models.IntegerField()
    status = models.CharField(max_length=12, choices=[(s, s) for s in DELIVERY_STATUSES])
    response_code = models.SmallIntegerField(null=True, blank=True)
    duration_ms = models.IntegerField(null=True, blank=True)
    response_excerpt = models.TextField(blank=True, default="", db_default="")
    error = models.TextField(blank=True, default="", db_default="")
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "x_webhook_deliveries"
        indexes = (
            # The ledger of one endpoint, newest first.
            models.Index(fields=("endpoint", "-id"), name="x_webhook_deliveries_endpoint"),
            models.Index(fields=("job_id",), name="x_webhook_deliveries_job"),
        )
        constraints = (
            models.CheckConstraint(
                condition=Q(status__in=list(DELIVERY_STATUSES)),
                name="x_webhook_deliveries_status_valid",
            ),
        )

    def __str__(self) -> str:
        return f"{self.event_id} attempt {self.attempt}: {self.status}"
