"""A tenancy policy as a project writes one: ``TENANT_CONTEXT`` installs the tenant in the
project's own context variable, and ``may_read`` answers from it alone, whether a view or a job
asks. The tenancy tests point the settings at these names."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.http import HttpRequest, JsonResponse

DOCUMENTS = {"acme-plan": "acme", "globex-plan": "globex"}
"""Each document and the tenant that owns it."""

ENTERED: list[str | None] = []
"""Every tenant the scope was entered with, in order (``None``: cleared)."""

_tenant: ContextVar[str | None] = ContextVar("tests_policy_tenant", default=None)


@contextmanager
def scope(tenant: str | None) -> Iterator[None]:
    """The ``TENANT_CONTEXT`` factory: the project's current tenant for the block."""
    ENTERED.append(tenant)
    token = _tenant.set(tenant)
    try:
        yield
    finally:
        _tenant.reset(token)


def current() -> str | None:
    return _tenant.get()


def may_read(document: str) -> bool:
    """The policy question: may the current tenant read ``document``? No tenant reads none."""
    tenant = _tenant.get()
    return tenant is not None and DOCUMENTS.get(document) == tenant


def tenant_from_request(request: HttpRequest) -> str | None:
    """``TENANT_FROM_REQUEST``: the tenant a request is for (a header, in these tests)."""
    return request.headers.get("X-Tenant") or None


def read_view(request: HttpRequest, document: str) -> JsonResponse:
    return JsonResponse({"tenant": current(), "may_read": may_read(document)})


def broken_scope(tenant: str | None) -> None:
    """Not a context manager: entering what it answers fails."""


NOT_CALLABLE = 42
