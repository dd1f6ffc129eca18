"""``manage.py jobs_relay``: publish jobs staged in the outbox (the loop lives in
``ultimat3_jobs.runtime.relay``)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ultimat3_jobs.management.commands.jobs_worker import add_log_level, configure_logging
from ultimat3_jobs.runtime.process import run_relay
from ultimat3_jobs.runtime.relay import RelayConfig


class Command(BaseCommand):
    help = "Publish jobs staged in x_outbox to the job store after their transaction commits."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--relay-id", default=None, help="This relay's id (default: random).")
        add_log_level(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        configure_logging(options["log_level"])
        code = run_relay(RelayConfig.from_settings(relay_id=options["relay_id"]))
        if code:
            raise SystemExit(code)
