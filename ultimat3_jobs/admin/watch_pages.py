"""What the app's own admin pages (dashboard, queues, backfills) share: who may open them, the
methods they take, and the frame of their context (``_page.html`` reads it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.admin import ModelAdmin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.template.response import TemplateResponse

from ultimat3_jobs.admin.permissions import VIEW_JOB, can_watch, has


def refusal(request: HttpRequest, methods: Sequence[str] = ("GET", "HEAD")) -> HttpResponse | None:
    """``PermissionDenied`` for a user who may not watch the queues; a 405 answer for a method
    the page does not take; ``None`` when the page may answer."""
    if not can_watch(request.user):
        raise PermissionDenied
    if request.method not in methods:
        return HttpResponseNotAllowed(list(methods))
    return None


def watch_page(
    model_admin: ModelAdmin[Any], request: HttpRequest, page: str, title: str, **context: Any
) -> TemplateResponse:
    """The page ``ultimat3_jobs/admin/<page>.html`` with the admin site's context, ``title``,
    the model's options, whether the user may open the jobs list, and ``context``."""
    return TemplateResponse(
        request,
        f"ultimat3_jobs/admin/{page}.html",
        {
            **model_admin.admin_site.each_context(request),
            "title": title,
            "opts": model_admin.opts,
            "can_view_jobs": has(request.user, VIEW_JOB),
            **context,
        },
    )
