"""Webhook endpoints and their delivery ledger.

Layer: surface. An endpoint is added by form (name, URL, tenant; its secret is generated and
shown once, to whoever added it); it is never edited by form. Disable, enable and rotate the
secret are actions, each behind its own permission (``disable_webhookendpoint``,
``enable_webhookendpoint``, ``rotate_webhookendpoint_secret``), and act through
:mod:`ultimat3_jobs.webhooks.ledger` as the CLI does. The ledger is read-only
(``view_webhookdelivery``), filtered by endpoint (each endpoint's row links to its own), status,
event type and day. A secret is never shown on a page but once, right after it was made.
"""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from ultimat3_jobs.admin.permissions import ReadOnlyAdmin, has, verb_permission
from ultimat3_jobs.admin.search import ExactSearch
from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.errors import JobsError
from ultimat3_jobs.models import WebhookDelivery, WebhookEndpoint
from ultimat3_jobs.webhooks import ledger

DISABLE = "ultimat3_jobs.disable_webhookendpoint"
ENABLE = "ultimat3_jobs.enable_webhookendpoint"
ROTATE = "ultimat3_jobs.rotate_webhookendpoint_secret"
VIEW_DELIVERIES = "ultimat3_jobs.view_webhookdelivery"


class EndpointAddForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = WebhookEndpoint
        fields = ("name", "url", "tenant_id")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        try:
            ledger.check_endpoint(
                data.get("name", ""), data.get("url", ""), tenant_id=data.get("tenant_id") or None
            )
        except JobsError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return data


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    form = EndpointAddForm
    list_display = (
        "name",
        "url",
        "tenant_id",
        "enabled",
        "consecutive_failures",
        "disabled_at",
        "disabled_reason",
        "deliveries_link",
    )
    list_filter = ("enabled",)
    search_fields = ("name", "url", "tenant_id")
    ordering = ("name",)
    actions = ("disable_endpoints", "enable_endpoints", "rotate_secrets")
    show_facets = admin.ShowFacets.NEVER

    def get_queryset(self, request: HttpRequest) -> QuerySet[WebhookEndpoint]:
        return super().get_queryset(request).using(get_settings().database)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_list_display(self, request: HttpRequest) -> Any:
        shown = super().get_list_display(request)
        if not has(request.user, VIEW_DELIVERIES):
            shown = tuple(column for column in shown if column != "deliveries_link")
        return shown

    @admin.display(description="deliveries")
    def deliveries_link(self, endpoint: WebhookEndpoint) -> str:
        url = reverse(f"{self.admin_site.name}:ultimat3_jobs_webhookdelivery_changelist")
        return format_html('<a href="{}?endpoint__id__exact={}">ledger</a>', url, endpoint.pk)

    has_disable_permission = verb_permission(DISABLE)
    has_enable_permission = verb_permission(ENABLE)
    has_rotate_permission = verb_permission(ROTATE)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        made = ledger.add_endpoint(obj.name, obj.url, tenant_id=obj.tenant_id or None)
        obj.pk = made.pk
        self.message_user(
            request,
            f"Endpoint {made.name} added. Its secret, shown this once: {made.secret}",
            messages.SUCCESS,
        )

    def _each(self, request: HttpRequest, queryset: QuerySet[WebhookEndpoint], verb: Any) -> int:
        done = 0
        for name in queryset.values_list("name", flat=True):
            done += 1 if verb(name) else 0
        return done

    @admin.action(permissions=["disable"], description="Disable the selected endpoints")
    def disable_endpoints(self, request: HttpRequest, queryset: QuerySet[WebhookEndpoint]) -> None:
        who = f"disabled by admin:{request.user.get_username()}"
        done = self._each(request, queryset, lambda name: ledger.disable(name, reason=who))
        self.message_user(request, f"Disabled {done} endpoint(s).", messages.SUCCESS)

    @admin.action(permissions=["enable"], description="Enable the selected endpoints")
    def enable_endpoints(self, request: HttpRequest, queryset: QuerySet[WebhookEndpoint]) -> None:
        done = self._each(request, queryset, ledger.enable)
        self.message_user(request, f"Enabled {done} endpoint(s).", messages.SUCCESS)

    @admin.action(permissions=["rotate"], description="Rotate the selected endpoints' secrets")
    def rotate_secrets(self, request: HttpRequest, queryset: QuerySet[WebhookEndpoint]) -> None:
        for name in queryset.values_list("name", flat=True):
            secret = ledger.rotate_secret(name).secret
            self.message_user(
                request,
                f"Endpoint {name}: new secret, shown this once: {secret} (the old one signs "
                "too for WEBHOOK_SECRET_OVERLAP_SECONDS)",
                messages.SUCCESS,
            )


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ExactSearch, ReadOnlyAdmin):
    """The ledger: every attempt, newest first, filtered by endpoint, status, event type and
    day; seen with ``view_webhookdelivery``, never changed."""

    list_display = (
        "created_at",
        "endpoint",
        "event_type",
        "event_id",
        "attempt",
        "status",
        "response_code",
        "duration_ms",
        "job_id",
    )
    list_filter = ("endpoint", "status", "event_type", "created_at")
    search_fields = ("event_id",)
    search_help_text = "An event id or a job id, matched exactly."
    ordering = ("-id",)
    list_select_related = ("endpoint",)
    show_full_result_count = False

    def exact_matches(
        self, request: HttpRequest, queryset: QuerySet[WebhookDelivery], term: str
    ) -> QuerySet[WebhookDelivery]:
        try:
            return queryset.filter(job_id=uuid.UUID(term))
        except ValueError:
            return queryset.filter(event_id=term)
