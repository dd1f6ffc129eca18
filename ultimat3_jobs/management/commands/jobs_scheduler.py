"""``manage.py jobs_scheduler``: fire cron jobs (the loop lives in
``ultimat3_jobs.runtime.scheduler``)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ultimat3_jobs.management.commands.jobs_worker import add_log_level, configure_logging
from ultimat3_jobs.runtime.process import run_scheduler
from ultimat3_jobs.runtime.scheduler.scheduler import SchedulerConfig


class Command(BaseCommand):
    help = "Fire cron tasks on their schedules; run several, one leads."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--scheduler-id", default=None, help="This scheduler's id (default: random)."
        )
        add_log_level(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        configure_logging(options["log_level"])
        code = run_scheduler(SchedulerConfig.from_settings(scheduler_id=options["scheduler_id"]))
        if code:
            raise SystemExit(code)
