"""The one-loop commands (``jobs_relay``, ``jobs_scheduler``), without running a loop: their
options, and how ``loop_command`` hands the id to the loop and its exit code to the process."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from django.core.management import call_command

from ultimat3_jobs.management.commands import jobs_relay, jobs_scheduler, jobs_worker
from ultimat3_jobs.management.commands.jobs_worker import loop_command


@pytest.fixture(autouse=True)
def keep_log_level() -> Iterator[None]:
    logger = logging.getLogger("ultimat3_jobs")
    level, handlers = logger.level, list(logger.handlers)
    yield
    logger.setLevel(level)
    logger.handlers[:] = handlers


@pytest.mark.parametrize(
    ("module", "name", "role"),
    [(jobs_relay, "jobs_relay", "relay"), (jobs_scheduler, "jobs_scheduler", "scheduler")],
)
def test_each_loop_command_takes_its_id_and_log_level(module: object, name: str, role: str) -> None:
    command = module.Command()  # type: ignore[attr-defined]
    parser = command.create_parser("manage.py", name)
    options = parser.parse_args([f"--{role}-id", "one", "--log-level", "DEBUG"])
    assert getattr(options, f"{role}_id") == "one"
    assert options.log_level == "DEBUG"
    assert parser.parse_args([]).log_level == "INFO"
    assert getattr(parser.parse_args([]), f"{role}_id") is None
    assert command.help


def test_a_loop_command_runs_the_loop_with_its_id_and_exits_with_its_code() -> None:
    seen: list[str | None] = []

    def run(loop_id: str | None) -> int:
        seen.append(loop_id)
        return 3 if loop_id == "failing" else 0

    command = loop_command("demo", "A demo loop.", run)
    call_command(command(), "--log-level", "WARNING")
    with pytest.raises(SystemExit) as stopped:
        call_command(command(), "--demo-id", "failing")
    assert stopped.value.code == 3
    assert seen == [None, "failing"]
    assert logging.getLogger("ultimat3_jobs").level == logging.INFO


def test_the_worker_supervisor_starts_its_children_without_repeating_the_checks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[list[str]] = []

    def supervise(argv: list[str], **options: object) -> int:
        seen.append(list(argv))
        return 0

    monkeypatch.setattr(jobs_worker, "supervise", supervise)
    monkeypatch.setattr(jobs_worker, "child_argv", lambda: ["python", "manage.py", "jobs_worker"])
    call_command("jobs_worker", "--processes", "2", "--burst")
    assert seen == [["python", "manage.py", "jobs_worker", "--skip-checks"]]
