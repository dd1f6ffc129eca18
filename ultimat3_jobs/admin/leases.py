"""The queues page's leases: every held key with its holders, declared limit and expiry, and a
release button for a stuck concurrency key.

Layer: surface. Reads through :func:`~ultimat3_jobs.operator.leases.leases_overview` (one
read, none on a driver without a lease store) and releases through
:func:`~ultimat3_jobs.operator.leases.release`. A release takes ``release_lease``, checked here,
on the server, whatever the page showed.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

from ultimat3_jobs.admin.permissions import RELEASE_LEASE, has
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.errors import JobsError
from ultimat3_jobs.operator import leases


def leases_context(driver: JobDriver, user: Any) -> dict[str, Any]:
    """What the page shows of the lease store: ``leases`` (``None`` when the driver keeps
    none), whether the read was cut at its bound, and whether the user may release."""
    if not driver.has_lease_store:
        return {"leases": None, "leases_truncated": False, "can_release": False}
    overview = leases.leases_overview(driver)
    return {
        "leases": overview["keys"],
        "leases_truncated": overview["truncated"],
        "can_release": has(user, RELEASE_LEASE),
    }


def release_lease(request: HttpRequest, driver: JobDriver) -> HttpResponse:
    """Free every slot of the posted concurrency key, then back to the page (POST, redirect,
    GET). Refused with 403 without ``release_lease``; a malformed or rate key is refused with
    its code in a message, and nothing is freed."""
    if not has(request.user, RELEASE_LEASE):
        raise PermissionDenied
    back = HttpResponseRedirect(request.get_full_path())
    key = request.POST.get("key", "")
    try:
        freed = leases.release(driver, key)
    except JobsError as error:
        messages.error(request, str(error))
        return back
    messages.success(
        request,
        f"Released {freed} slot{'s' if freed != 1 else ''} of {key}; the runs that held them "
        "are not stopped.",
    )
    return back
