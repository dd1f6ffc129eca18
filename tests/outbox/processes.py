"""Subprocesses for the outbox tests: relays, workers with a relay beside them, and callers.

Each runs with ``--settings tests.settings_outbox`` (or ``DJANGO_SETTINGS_MODULE`` set to it),
pointed at the two databases pytest-django created for this run, from the repository root, in a
process group of its own, writing to its own log file under the test's ``tmp_path``. The
``processes`` fixture (``conftest.py``) SIGKILLs every one it started and waits until their
database sessions are gone, so that pytest-django can flush the tables and, at the end, drop
the databases. The process and group classes are ``tests/support/processes.py``'s.
"""

from __future__ import annotations

from pathlib import Path

from tests.settings_outbox import OUTBOX_APPLICATION_NAME
from tests.support.processes import REPO_ROOT, ManagedProcess, ProcessGroup
from ultimat3_jobs.drivers.postgres.listen import LISTEN_APPLICATION_NAME, PROBE_APPLICATION_NAME

__all__ = [
    "RELAY_STARTED",
    "REPO_ROOT",
    "SESSIONS",
    "SETTINGS",
    "WORKER_STARTED",
    "Process",
    "Processes",
]

SETTINGS = "tests.settings_outbox"
SESSIONS = (OUTBOX_APPLICATION_NAME, LISTEN_APPLICATION_NAME, PROBE_APPLICATION_NAME)
"""``application_name`` of every session a subprocess opens: Django's (both aliases), the wake
listener's and its probe's."""

RELAY_STARTED = "jobs.relay.started"
WORKER_STARTED = "jobs.worker.started"
LOG_TAIL_LINES = 40

Process = ManagedProcess


class Processes(ProcessGroup):
    """Starts subprocesses for one test; :meth:`kill_all` ends them and waits out their
    sessions. A failure shows the logs of the last four processes started."""

    def __init__(self, tmp_path: Path) -> None:
        super().__init__(
            tmp_path,
            settings=SETTINGS,
            sessions=SESSIONS,
            database_env={
                "ULTIMAT3_OUTBOX_DB_NAME": "default",
                "ULTIMAT3_OUTBOX_JOBS_DB_NAME": "jobs",
            },
            settings_in_env=True,
            tail_lines=LOG_TAIL_LINES,
            report_last=4,
            audit_exits=False,
        )

    def relay(self, name: str) -> ManagedProcess:
        return self.command(name, "jobs_relay", "--relay-id", name)
