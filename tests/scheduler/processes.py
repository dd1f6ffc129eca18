"""``jobs_scheduler`` subprocesses for the scheduler's process tests.

Each runs ``python -m django jobs_scheduler --settings tests.settings_scheduler --scheduler-id
ID`` from the repository root, against the database pytest-django created for this run, in a
process group of its own, logging to its own file under the test's ``tmp_path``. The process
and group classes are ``tests/support/processes.py``'s.
"""

from __future__ import annotations

from pathlib import Path

from tests.settings_scheduler import SCHEDULER_APPLICATION_NAME
from tests.support.processes import ManagedProcess, ProcessGroup, database_sessions

SETTINGS = "tests.settings_scheduler"


class Schedulers(ProcessGroup):
    """Starts scheduler subprocesses for one test; :meth:`kill_all` ends every one of them."""

    def __init__(self, tmp_path: Path) -> None:
        super().__init__(
            tmp_path,
            settings=SETTINGS,
            sessions=(SCHEDULER_APPLICATION_NAME,),
            database_env={"ULTIMAT3_SCHEDULER_DB_NAME": "default"},
            log_prefix="scheduler-",
            what="schedulers",
        )
        self.database = self.databases["default"]

    def start(self, scheduler_id: str, *, log_level: str = "INFO") -> ManagedProcess:  # type: ignore[override]
        """Start ``jobs_scheduler`` with this id (answers at once)."""
        return self.command(
            scheduler_id,
            "jobs_scheduler",
            *("--scheduler-id", scheduler_id, "--log-level", log_level),
        )


def scheduler_sessions() -> list[tuple[int, str]]:
    """``(pid, application_name)`` of the scheduler subprocesses' sessions on the test
    database."""
    return [(pid, name) for pid, _, name, _ in database_sessions((SCHEDULER_APPLICATION_NAME,))]
