"""The queues page: depth per queue and state, the oldest ready job's age, the pauses, with
pause and resume buttons; the held lease keys, with a release button (``leases.py``); and the
retention the default purge applies to each of its targets.

Layer: surface. Reads ``queue_stats``, ``pause_list`` and ``lease_list`` (three reads; see
their costs on :class:`~ultimat3_jobs.drivers.base.JobDriver`) and shapes them with
:func:`~ultimat3_jobs.operator.introspection.queues_overview`; pausing and resuming go through
:mod:`~ultimat3_jobs.operator.verbs`. Seeing the page takes ``view_job``, ``pause_queue`` or
``release_lease``; a pause or resume takes ``pause_queue``, a release ``release_lease``, each
checked on the server, whatever the page showed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

from ultimat3_jobs.admin.display import queue_rows
from ultimat3_jobs.admin.leases import leases_context, release_lease
from ultimat3_jobs.admin.permissions import PAUSE_QUEUE, VIEW_JOB, author, has
from ultimat3_jobs.admin.watch_pages import refusal, watch_page
from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.errors import JobDeclarationInvalid, JobsError
from ultimat3_jobs.factories.purge import purge_declaration, retention_text
from ultimat3_jobs.factories.retention import DEFAULT_PURGE_NAME
from ultimat3_jobs.operator import introspection, verbs
from ultimat3_jobs.types import PAUSE_SCOPES

if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin

TARGET_MAX_LENGTH = 200
"""The longest queue, job or cron name a pause can hold (``x_job_pauses.target``)."""

OPERATIONS = ("pause", "resume")


def retention_rows() -> list[dict[str, Any]]:
    """Each target of the default purge: its name, the setting its retention is read from, and
    how long its rows are kept now (read from the settings, as the next pass will). Empty when
    ``PURGE_CRON`` is ``None`` (no default purge is declared)."""
    try:
        declaration = purge_declaration(DEFAULT_PURGE_NAME)
    except JobDeclarationInvalid:
        return []
    rows = []
    for target in declaration.targets:
        seconds = target.retention()
        rows.append(
            {
                "target": target.name,
                "setting": target.setting or "-",
                "seconds": seconds,
                "kept": retention_text(seconds),
            }
        )
    return rows


def queues_view(model_admin: ModelAdmin[Any], request: HttpRequest) -> HttpResponse:
    refused = refusal(request, ("GET", "HEAD", "POST"))
    if refused is not None:
        return refused
    if request.method == "POST":
        if request.POST.get("op") == "release":
            return release_lease(request, get_driver())
        return change_pause(request)
    driver = get_driver()
    pauses = driver.pause_list()
    overview = introspection.queues_overview(driver.queue_stats(), pauses)
    site = model_admin.admin_site
    return watch_page(
        model_admin,
        request,
        "queues",
        "Queues",
        queues=queue_rows(overview, admin_site_name=site.name, link=has(request.user, VIEW_JOB)),
        pauses=pauses,
        scopes=PAUSE_SCOPES,
        can_pause=has(request.user, PAUSE_QUEUE),
        target_max_length=TARGET_MAX_LENGTH,
        retention=retention_rows(),
        purge_name=DEFAULT_PURGE_NAME,
        purge_cron=get_settings().purge_cron,
        purge_batch_size=get_settings().purge_batch_size,
        **leases_context(driver, request.user),
    )


def change_pause(request: HttpRequest) -> HttpResponse:
    """Pause or resume one queue, job name or cron, then back to the page (POST, redirect,
    GET). Refused with 403 without ``pause_queue``."""
    if not has(request.user, PAUSE_QUEUE):
        raise PermissionDenied
    back = HttpResponseRedirect(request.get_full_path())
    operation = request.POST.get("op", "")
    scope = request.POST.get("scope", "queue")
    target = request.POST.get("target", "").strip()
    reason = request.POST.get("reason", "").strip()
    if operation not in OPERATIONS:
        messages.error(request, f"Unknown operation {operation!r}: pause or resume.")
        return back
    if len(target) > TARGET_MAX_LENGTH:
        messages.error(request, f"A pause target is at most {TARGET_MAX_LENGTH} characters.")
        return back
    driver = get_driver()
    try:
        if operation == "pause":
            fresh = verbs.pause(
                driver,
                scope=scope,  # type: ignore[arg-type]  # the verb refuses an unknown scope
                target=target,
                paused_by=author(request.user),
                reason=reason,
            )
            text = f"Paused {scope} {target}." if fresh else f"{scope} {target} was already paused."
        else:
            lifted = verbs.resume(driver, scope=scope, target=target)  # type: ignore[arg-type]
            text = f"Resumed {scope} {target}." if lifted else f"{scope} {target} was not paused."
    except JobsError as error:
        messages.error(request, str(error))
        return back
    messages.success(request, text)
    return back
