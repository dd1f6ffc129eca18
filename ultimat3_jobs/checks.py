"""System checks: each problem of ``ULTIMAT3_JOBS`` as ``ultimat3_jobs.E0xx``, with the same
message the settings loader raises."""

from __future__ import annotations

from typing import Any

from django.core import checks

from ultimat3_jobs.conf import raw_setting, validate


@checks.register(checks.Tags.compatibility)
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    return [
        checks.Error(message, id=check_id, hint="See docs/reference/settings.md.")
        for check_id, message in validate(raw_setting())
    ]
