from __future__ import annotations

from django.apps import AppConfig


class FeatureAppConfig(AppConfig):
    name = "tests.featureapp"
    label = "featureapp"
    default_auto_field = "django.db.models.BigAutoField"
