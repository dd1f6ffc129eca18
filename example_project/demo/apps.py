from __future__ import annotations

from django.apps import AppConfig


class DemoConfig(AppConfig):
    # ultimat3_jobs imports each installed app's `jobs` module at start-up, so the demo's jobs
    # are registered in every process without any code here.
    name = "example_project.demo"
    label = "demo"
    verbose_name = "ultimat3-jobs demo"
