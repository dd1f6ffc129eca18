"""The Django app: validates the settings, registers the system checks, and autodiscovers every
installed app's ``jobs`` module."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core.signals import setting_changed

from ultimat3_jobs.conf import SETTING_NAME, reset_settings
from ultimat3_jobs.drivers import reset_drivers

# The backend's path, and the deprecated one settings may still name.
TASKS_BACKEND_PATHS = ("ultimat3_jobs.contrib.django_tasks", "ultimat3_jobs.tasks.")


def _on_setting_changed(*, setting: str, **_: Any) -> None:
    if setting in (SETTING_NAME, "DATABASES"):
        reset_settings()
        reset_drivers()


class Ultimat3JobsConfig(AppConfig):
    name = "ultimat3_jobs"
    label = "ultimat3_jobs"
    verbose_name = "Jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from ultimat3_jobs import checks  # noqa: F401 -- registers the system checks
        from ultimat3_jobs.model.registry import autodiscover

        setting_changed.connect(_on_setting_changed, dispatch_uid="ultimat3_jobs.settings")
        # A bad ULTIMAT3_JOBS is reported by the system checks (every problem at once) and
        # raised as ImproperlyConfigured by the first use of the settings.
        autodiscover()
        _load_tasks_backend()


def _load_tasks_backend() -> None:
    """When ``TASKS`` uses our backend, load it now, so that every process (a worker above all)
    can resolve the jobs Django Tasks become."""
    backends = getattr(settings, "TASKS", {}) or {}
    if any(
        str(params.get("BACKEND", "")).startswith(TASKS_BACKEND_PATHS)
        for params in backends.values()
        if isinstance(params, dict)
    ):
        import_module("ultimat3_jobs.contrib.django_tasks.backend")
