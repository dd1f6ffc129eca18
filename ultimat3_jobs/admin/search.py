"""The admin's search boxes match exactly: an equality on an id, a key or a digest, never a
``LIKE`` over a large table.

Layer: surface."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest


class ExactSearch:
    """Mixed into a ``ModelAdmin`` before it: a blank search lists every row; any other term
    is stripped and handed to :meth:`exact_matches`, whose rows are never duplicates."""

    def exact_matches(
        self, request: HttpRequest, queryset: QuerySet[Any], term: str
    ) -> QuerySet[Any]:
        """The rows ``term`` names exactly."""
        raise NotImplementedError

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        return self.exact_matches(request, queryset, term), False
