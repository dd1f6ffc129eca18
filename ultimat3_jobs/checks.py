"""System checks: each problem of ``ULTIMAT3_JOBS`` as ``ultimat3_jobs.E0xx``, with the same
message the settings loader raises."""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.utils.module_loading import import_string

from ultimat3_jobs.conf import Settings, get_settings, raw_setting, validate
from ultimat3_jobs.tracing import check_traceparent_source

DRIVER_CHECK_ID = "ultimat3_jobs.E010"
TRACEPARENT_CHECK_ID = "ultimat3_jobs.E060"


@checks.register(checks.Tags.compatibility)
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    problems = validate(raw_setting())
    if not problems:
        settings = get_settings()
        problems = check_driver_importable(settings)
        traceparent = check_traceparent_source(settings)
        if traceparent is not None:
            problems.append((TRACEPARENT_CHECK_ID, traceparent))
    return [
        checks.Error(message, id=check_id, hint="See docs/reference/settings.md.")
        for check_id, message in problems
    ]


def check_driver_importable(settings: Settings) -> list[tuple[str, str]]:
    """``DRIVER`` names a class that imports and is a JobDriver."""
    from ultimat3_jobs.drivers.base import JobDriver

    path = settings.driver_path
    try:
        driver_class = import_string(path)
    except ImportError as exc:
        return [
            (
                DRIVER_CHECK_ID,
                f"ULTIMAT3_JOBS['DRIVER'] names {path!r}, which cannot be imported: {exc}",
            )
        ]
    if not (isinstance(driver_class, type) and issubclass(driver_class, JobDriver)):
        return [
            (
                DRIVER_CHECK_ID,
                f"ULTIMAT3_JOBS['DRIVER'] names {path!r}, which is not a JobDriver subclass",
            )
        ]
    return []
