"""The job changelist's filters: state, queue and job name by exact value (their choices from
the declared jobs, no query), and the tenant, typed in.

Layer: surface."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.views.main import PAGE_VAR
from django.db.models import QuerySet
from django.http import HttpRequest

from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.model.registry import registry

FILTER_PARAMETERS = frozenset({"state__exact", "queue", "name", "tenant"})
"""The only lookups the changelist takes from its URL: those of its filters."""


class _ExactValueFilter(admin.SimpleListFilter):
    """Exact match on one column; the choices come from the declared jobs (no query), plus the
    value asked for when it is not one of them."""

    field: str

    def declared(self) -> list[str]:
        raise NotImplementedError

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        values = set(self.declared())
        current = request.GET.get(self.parameter_name or "")
        if current:
            values.add(current)
        return [(value, value) for value in sorted(values)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value:
            return queryset.filter(**{self.field: value})
        return queryset


class QueueFilter(_ExactValueFilter):
    title = "queue"
    parameter_name = "queue"
    field = "queue"

    def declared(self) -> list[str]:
        found = {definition.resolved_queue() for definition in registry.definitions()}
        found.add(get_settings().default_queue)
        return sorted(found)


class NameFilter(_ExactValueFilter):
    title = "job name"
    parameter_name = "name"
    field = "name"

    def declared(self) -> list[str]:
        return sorted(definition.name for definition in registry.definitions())


class TenantFilter(admin.SimpleListFilter):
    """Exact tenant id, typed in: a table of jobs has no cheap list of its tenants."""

    title = "tenant"
    parameter_name = "tenant"
    template = "ultimat3_jobs/admin/input_filter.html"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return []

    def has_output(self) -> bool:
        return True

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value:
            return queryset.filter(tenant_id=value)
        return queryset

    def __init__(
        self, request: HttpRequest, params: dict[str, Any], model: Any, model_admin: Any
    ) -> None:
        super().__init__(request, params, model, model_admin)
        name = self.parameter_name or ""
        self.input_name = name
        self.input_value = self.value() or ""
        # The other parameters of the page, carried by the filter's form as hidden fields.
        self.hidden = [
            (key, value) for key, value in request.GET.items() if key not in (name, PAGE_VAR, "e")
        ]
