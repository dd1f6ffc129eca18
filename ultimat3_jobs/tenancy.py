"""``TenantMiddleware``: a request runs in its tenant's scope, as a job's body does.

Layer: surface. Add ``"ultimat3_jobs.tenancy.TenantMiddleware"`` to ``MIDDLEWARE`` (after the
middleware that authenticates the user) and set ``ULTIMAT3_JOBS["TENANT_FROM_REQUEST"]`` to the
dotted path of a callable of the request that answers its tenant (or ``None``). Each request
then runs inside :func:`~ultimat3_jobs.model.tenancy.tenant_scope` of that tenant:
``current_tenant()`` answers it and the ``TENANT_CONTEXT`` factory's context manager is entered,
the same scope the worker gives a job's body and its ``on_settled``. A policy that reads the
scope answers the same question the same way in a view and in a job.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponseBase

from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.errors import JobsConfigurationError
from ultimat3_jobs.model.tenancy import current_tenant, tenancy_hook, tenant_scope

__all__ = ["MIDDLEWARE_PATH", "TenantMiddleware", "current_tenant", "request_tenant"]

MIDDLEWARE_PATH = "ultimat3_jobs.tenancy.TenantMiddleware"


def request_tenant(request: HttpRequest) -> str | None:
    """The tenant ``TENANT_FROM_REQUEST`` answers for ``request`` (as text, or ``None``).
    Raises :class:`~ultimat3_jobs.errors.JobsConfigurationError` when the setting is unset."""
    from_request = tenancy_hook(get_settings(), "TENANT_FROM_REQUEST")
    if from_request is None:
        raise JobsConfigurationError(
            f"{MIDDLEWARE_PATH} needs ULTIMAT3_JOBS['TENANT_FROM_REQUEST']: the dotted path of "
            "a callable of the request that answers its tenant (or None)"
        )
    value = from_request(request)
    return None if value is None else str(value)


class TenantMiddleware:
    """Run each request in the scope of the tenant ``TENANT_FROM_REQUEST`` answers for it."""

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        with tenant_scope(request_tenant(request)):
            response: HttpResponseBase = self.get_response(request)
        return response
