"""The system checks refuse a tenancy setting that names nothing callable (E063 to E065), and
``TenantMiddleware`` without ``TENANT_FROM_REQUEST`` (E065); the settings loader refuses a value
that is not a path or a callable."""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings
from django.test import override_settings

from tests.tenancy.conftest import TENANCY
from ultimat3_jobs.checks import check_settings
from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.errors import JobsConfigurationError

POLICY = "tests.testapp.tenancy"


def errors(**values: object) -> list[tuple[str, str]]:
    with override_settings(ULTIMAT3_JOBS={**TENANCY, **values}):
        return [(e.id, e.msg) for e in check_settings()]


def test_the_configured_hooks_pass() -> None:
    assert errors() == []


@pytest.mark.parametrize(
    ("key", "check_id"),
    [
        ("TENANT_RESOLVER", "ultimat3_jobs.E063"),
        ("TENANT_CONTEXT", "ultimat3_jobs.E064"),
        ("TENANT_FROM_REQUEST", "ultimat3_jobs.E065"),
    ],
)
def test_a_hook_that_does_not_import_or_is_not_callable_is_refused(key: str, check_id: str) -> None:
    ((found_id, message),) = errors(**{key: f"{POLICY}.nowhere"})
    assert found_id == check_id
    assert f"ULTIMAT3_JOBS[{key!r}] names '{POLICY}.nowhere', which cannot be imported" in message
    ((found_id, message),) = errors(**{key: f"{POLICY}.NOT_CALLABLE"})
    assert (found_id, message.endswith("which is not callable")) == (check_id, True)


def test_a_hook_that_is_not_a_path_is_refused_when_read() -> None:
    with override_settings(ULTIMAT3_JOBS={**TENANCY, "TENANT_CONTEXT": 42}):
        assert [e.id for e in check_settings()] == ["ultimat3_jobs.E064"]
        with pytest.raises(JobsConfigurationError, match="TENANT_CONTEXT"):
            get_settings()


def test_the_middleware_without_its_setting_is_refused() -> None:
    middleware = [*django_settings.MIDDLEWARE, "ultimat3_jobs.tenancy.TenantMiddleware"]
    with override_settings(MIDDLEWARE=middleware):
        ((found_id, message),) = errors(TENANT_FROM_REQUEST=None)
        assert errors() == []
    assert found_id == "ultimat3_jobs.E065"
    assert "TenantMiddleware" in message and "TENANT_FROM_REQUEST" in message
