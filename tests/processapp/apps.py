from __future__ import annotations

from django.apps import AppConfig


class ProcessAppConfig(AppConfig):
    name = "tests.processapp"
    label = "processapp"
    default_auto_field = "django.db.models.BigAutoField"
