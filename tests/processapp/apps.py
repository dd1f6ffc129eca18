from __future__ import annotations

from importlib import import_module

from django.apps import AppConfig


class ProcessAppConfig(AppConfig):
    name = "tests.processapp"
    label = "processapp"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The limited jobs, in the worker subprocesses only (this app is installed there alone).
        import_module("tests.processapp.limited")
