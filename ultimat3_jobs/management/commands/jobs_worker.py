"""``manage.py jobs_worker``: parse options, then run the worker (the loop lives in
``ultimat3_jobs.runtime.worker``)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ultimat3_jobs.checks import CHECK_TAG
from ultimat3_jobs.runtime import beside
from ultimat3_jobs.runtime.common.ids import default_worker_id
from ultimat3_jobs.runtime.process import child_argv, run_worker, supervise
from ultimat3_jobs.runtime.worker.config import WorkerConfig
from ultimat3_jobs.types import QUEUE_NAME_PATTERN


def _count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 1000:
        raise ValueError(text)
    return value


class Command(BaseCommand):
    help = "Run jobs: claim, execute and settle them until stopped (SIGTERM drains)."
    # The project's own checks (settings, driver, enforceable limits) refuse a start; every
    # app's checks (models, URLs, admin, templates) are `manage.py check`'s, and cost each
    # worker process about 20 ms of its start-up.
    requires_system_checks = (CHECK_TAG,)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--queues",
            default=None,
            help="Comma-separated queues to work (default: ULTIMAT3_JOBS['DEFAULT_QUEUE']).",
        )
        parser.add_argument(
            "--concurrency",
            type=_positive_int,
            default=None,
            help="Jobs run at once per process (default: WORKER_CONCURRENCY).",
        )
        parser.add_argument(
            "--processes",
            type=_positive_int,
            default=1,
            help="Worker processes under this one (default 1: work in this process).",
        )
        parser.add_argument("--burst", action="store_true", help="Exit 0 once nothing is due.")
        parser.add_argument(
            "--max-jobs",
            type=_count,
            default=None,
            help="Exit 0 after settling this many jobs (a supervisor restarts the process).",
        )
        parser.add_argument(
            "--max-memory",
            type=_count,
            default=None,
            help="Exit 0 once resident memory passes this many MB.",
        )
        parser.add_argument(
            "--with-relay",
            action="store_true",
            help="Also run the outbox relay in this process (one-process setups).",
        )
        parser.add_argument(
            "--with-scheduler",
            action="store_true",
            help="Also run a scheduler in this process (one-process setups).",
        )
        parser.add_argument(
            "--worker-id", default=None, help="This worker's id (default: host:pid:random)."
        )
        add_log_level(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        configure_logging(options["log_level"])
        queues = None
        if options["queues"]:
            queues = tuple(q.strip() for q in options["queues"].split(",") if q.strip())
            if not queues:
                raise CommandError("--queues names no queue")
            bad = [q for q in queues if not re.fullmatch(QUEUE_NAME_PATTERN, q)]
            if bad:
                raise CommandError(
                    f"--queues: {', '.join(map(repr, bad))} is not a queue name "
                    f"({QUEUE_NAME_PATTERN})"
                )
        worker_id = options["worker_id"] or default_worker_id()
        if options["processes"] > 1:
            code = supervise(
                # The system checks ran in this process, on the same settings, before handle():
                # each child would only repeat them.
                [*child_argv(), "--skip-checks"],
                processes=options["processes"],
                worker_id=worker_id,
                burst=options["burst"],
            )
        else:
            config = WorkerConfig.from_settings(
                queues=queues,
                concurrency=options["concurrency"],
                worker_id=worker_id,
                burst=options["burst"],
                max_jobs=options["max_jobs"],
                max_memory_mb=options["max_memory"],
            )
            relay = beside.relay.RelayConfig.from_settings() if options["with_relay"] else None
            scheduler = (
                beside.scheduler.SchedulerConfig.from_settings()
                if options["with_scheduler"]
                else None
            )
            code = run_worker(config, relay=relay, scheduler=scheduler)
        if code:
            raise SystemExit(code)


def add_log_level(parser: CommandParser) -> None:
    """The ``--log-level`` option every long-running command takes."""
    parser.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="Level of the ultimat3_jobs loggers (default INFO).",
    )


def configure_logging(level: str) -> None:
    logger = logging.getLogger("ultimat3_jobs")
    logger.setLevel(level)
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
        logger.addHandler(handler)


class LoopCommand(BaseCommand):
    """A command that runs one loop until it is stopped: its ``--<role>-id`` and
    ``--log-level`` options, and the loop's exit code as the process's (see
    :func:`loop_command`)."""

    role = ""
    requires_system_checks = (CHECK_TAG,)  # as the worker's

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            f"--{self.role}-id", default=None, help=f"This {self.role}'s id (default: random)."
        )
        add_log_level(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        configure_logging(options["log_level"])
        code = self.run(options[f"{self.role}_id"])
        if code:
            raise SystemExit(code)

    def run(self, loop_id: str | None) -> int:
        """Run the loop with this id (``None``: a random one) and answer its exit code."""
        raise NotImplementedError


def loop_command(role: str, help: str, run: Callable[[str | None], int]) -> type[LoopCommand]:
    """The ``Command`` of a one-loop process: ``run(loop_id)`` runs the loop of ``role``."""

    class Command(LoopCommand):
        def run(self, loop_id: str | None) -> int:
            return run(loop_id)

    Command.role, Command.help = role, help
    return Command
