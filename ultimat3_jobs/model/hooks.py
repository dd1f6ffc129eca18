"""Settings that name a hook: a callable, or the dotted path of one (``TENANT_RESOLVER``,
``TENANT_CONTEXT``, ``TENANT_FROM_REQUEST``, ``TRACEPARENT``).

Layer L3 (job model). A path is imported once, on first use.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from django.utils.module_loading import import_string

from ultimat3_jobs.conf import Settings
from ultimat3_jobs.errors import JobsConfigurationError


@cache
def _imported(path: str) -> Any:
    return import_string(path)


def setting_hook(settings: Settings, key: str) -> Callable[..., Any] | None:
    """The callable the setting ``key`` names, or ``None`` when unset. Raises
    :class:`~ultimat3_jobs.errors.JobsConfigurationError` for a path that does not import or
    names something that is not callable (the system checks report it first)."""
    setting = getattr(settings, key.lower())
    if setting is None or callable(setting):
        return setting  # type: ignore[no-any-return]  # a callable of the setting
    try:
        found = _imported(setting)
    except ImportError as exc:
        raise JobsConfigurationError(
            f"ULTIMAT3_JOBS[{key!r}] names {setting!r}, which cannot be imported: {exc}"
        ) from exc
    if not callable(found):
        raise JobsConfigurationError(
            f"ULTIMAT3_JOBS[{key!r}] names {setting!r}, which is not callable"
        )
    return found  # type: ignore[no-any-return]  # import_string answers Any
