"""Webhook endpoints and their delivery ledger: the one place that reads and writes
``x_webhook_endpoints`` and ``x_webhook_deliveries`` (on the job store's database).

The operator verbs (add, disable, enable, rotate a secret) live here, and so do the writes a
delivery makes: one ledger row per attempt, and the endpoint's count of consecutive failures,
in one transaction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Case, F, Q, Value, When
from django.db.models.functions import Now
from django.utils import timezone

from ultimat3_jobs.carry import carried
from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.errors import WebhookEndpointInvalid, WebhookEndpointNotFound
from ultimat3_jobs.webhooks.guard import parse_url
from ultimat3_jobs.webhooks.signing import new_secret, secret_key
from ultimat3_jobs.webhooks.tables import WebhookDelivery, WebhookEndpoint

ENDPOINT_NAME_PATTERN = r"[a-z0-9][a-z0-9_.:-]{0,99}"
EXCERPT_LIMIT = 1024
"""At most this many characters of a response body are kept in the ledger."""
ERROR_LIMIT = 1000
_NAME = re.compile(ENDPOINT_NAME_PATTERN)
DISABLED_BY_FAILURES = "consecutive failures"


def _database() -> str:
    return get_settings().database


def endpoint_named(name: str) -> WebhookEndpoint:
    """The endpoint called ``name``; raises :class:`WebhookEndpointNotFound`."""
    found = WebhookEndpoint.objects.using(_database()).filter(name=name).first()
    if found is None:
        raise WebhookEndpointNotFound(f"no webhook endpoint is named {name!r:.120}", name=name)
    return found


def check_endpoint(name: str, url: str, *, tenant_id: str | None = None) -> None:
    """Refuse an endpoint's name, URL or tenant that breaks its rule (before any write)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise WebhookEndpointInvalid(
            f"name must match {ENDPOINT_NAME_PATTERN}; got {name!r:.120}",
            field="name",
            rule="endpoint-name",
        )
    parse_url(url)
    if len(url) > 2000:
        raise WebhookEndpointInvalid("url must be at most 2000 characters", field="url")
    if tenant_id is not None and (not isinstance(tenant_id, str) or not 1 <= len(tenant_id) <= 200):
        raise WebhookEndpointInvalid(
            f"tenant_id must be None or text of 1 to 200 characters; got {tenant_id!r:.80}",
            field="tenant_id",
            rule="tenant-text",
        )


def add_endpoint(
    name: str, url: str, *, tenant_id: str | None = None, secret: str | None = None
) -> WebhookEndpoint:
    """Store a new endpoint (enabled) and answer it; its secret is generated unless given."""
    check_endpoint(name, url, tenant_id=tenant_id)
    chosen = secret if secret is not None else new_secret()
    secret_key(chosen)
    database = _database()
    if WebhookEndpoint.objects.using(database).filter(name=name).exists():
        raise WebhookEndpointInvalid(
            f"a webhook endpoint is already named {name!r}", field="name", rule="unique"
        )
    return WebhookEndpoint.objects.using(database).create(
        name=name, url=url, tenant_id=tenant_id, secret=chosen
    )


def signing_secrets(endpoint: WebhookEndpoint, now: datetime | None = None) -> list[str]:
    """The secrets a delivery to ``endpoint`` is signed with: its secret, and the one before
    it while that one is still honoured."""
    found = [endpoint.secret]
    until = endpoint.previous_secret_until
    if endpoint.previous_secret and until is not None and until > (now or timezone.now()):
        found.append(endpoint.previous_secret)
    return found


def rotate_secret(name: str, *, secret: str | None = None) -> WebhookEndpoint:
    """Give endpoint ``name`` a new secret; the old one still signs deliveries for
    ``WEBHOOK_SECRET_OVERLAP_SECONDS``, so that receivers can switch without losing one."""
    chosen = secret if secret is not None else new_secret()
    secret_key(chosen)
    overlap = timedelta(seconds=get_settings().webhook_secret_overlap_seconds)
    with transaction.atomic(using=_database()):
        endpoint = endpoint_named(name)
        endpoint.previous_secret = endpoint.secret
        endpoint.previous_secret_until = timezone.now() + overlap
        endpoint.secret = chosen
        endpoint.save(update_fields=["secret", "previous_secret", "previous_secret_until"])
    return endpoint


def disable(name: str, *, reason: str = "disabled by an operator") -> bool:
    """Disable endpoint ``name``: deliveries to it fail at once, sending nothing. Answers
    whether it was enabled."""
    endpoint_named(name)
    changed = (
        WebhookEndpoint.objects.using(_database())
        .filter(name=name, enabled=True)
        .update(enabled=False, disabled_at=Now(), disabled_reason=reason[:200])
    )
    return changed == 1


def enable(name: str) -> bool:
    """Enable endpoint ``name`` again, its count of consecutive failures back to zero. Answers
    whether it was disabled."""
    endpoint_named(name)
    changed = (
        WebhookEndpoint.objects.using(_database())
        .filter(name=name)
        .filter(Q(enabled=False) | Q(consecutive_failures__gt=0))
        .update(enabled=True, consecutive_failures=0, disabled_at=None, disabled_reason="")
    )
    return changed == 1


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one delivery attempt did, as the ledger keeps it."""

    job_id: object
    event_id: str
    event_type: str
    attempt: int
    status: str
    response_code: int | None = None
    duration_ms: int | None = None
    response_excerpt: str = ""
    error: str = ""


def record(endpoint: WebhookEndpoint, attempt: Attempt) -> bool:
    """Write one ledger row and, for a sent attempt, move the endpoint's count of consecutive
    failures (to zero on success; up by one on failure, disabling the endpoint when it reaches
    ``WEBHOOK_DISABLE_AFTER_FAILURES``), in one transaction. Answers whether a failed attempt
    left the endpoint disabled."""
    limit = get_settings().webhook_disable_after_failures
    database = _database()
    with transaction.atomic(using=database):
        columns = carried(attempt, WebhookDelivery) | {
            "response_excerpt": attempt.response_excerpt[:EXCERPT_LIMIT],
            "error": attempt.error[:ERROR_LIMIT],
        }
        WebhookDelivery.objects.using(database).create(endpoint_id=endpoint.pk, **columns)
        rows = WebhookEndpoint.objects.using(database).filter(pk=endpoint.pk)
        if attempt.status == "succeeded":
            rows.filter(consecutive_failures__gt=0).update(consecutive_failures=0)
            return False
        if attempt.status != "failed":
            return False
        reaches = Q(enabled=True, consecutive_failures__gte=limit - 1)
        rows.update(
            consecutive_failures=F("consecutive_failures") + 1,
            enabled=Case(When(reaches, then=Value(False)), default=F("enabled")),
            disabled_at=Case(When(reaches, then=Now()), default=F("disabled_at")),
            disabled_reason=Case(
                When(reaches, then=Value(f"{limit} {DISABLED_BY_FAILURES}")),
                default=F("disabled_reason"),
            ),
        )
        return not rows.values_list("enabled", flat=True).get()


def purge_deliveries(*, before: datetime, limit: int) -> int:
    """Delete at most ``limit`` ledger rows recorded before ``before``, oldest first (walking
    the primary key, which grows with ``created_at``), skipping rows another transaction holds;
    answers how many. Two statements: the ids, then one ``DELETE ... WHERE id IN``."""
    database = _database()
    with transaction.atomic(using=database):
        ids = list(
            WebhookDelivery.objects.using(database)
            .filter(created_at__lt=before)
            .order_by("pk")
            .select_for_update(skip_locked=True)
            .values_list("pk", flat=True)[:limit]
        )
        if not ids:
            return 0
        deleted, _ = WebhookDelivery.objects.using(database).filter(pk__in=ids).delete()
    return deleted


def count_deliveries(*, before: datetime, limit: int) -> int:
    """How many ledger rows were recorded before ``before``, counted up to ``limit``."""
    rows = WebhookDelivery.objects.using(_database()).filter(created_at__lt=before)
    return rows.order_by()[:limit].count()
