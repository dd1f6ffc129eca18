"""``jobs_scheduler`` subprocesses for the scheduler's process tests.

Each runs ``python -m django jobs_scheduler --settings tests.settings_scheduler --scheduler-id
ID`` from the repository root, against the database pytest-django created for this run, in a
process group of its own, logging to its own file under the test's ``tmp_path``. The process
wrapper is the one ``tests/process/`` uses for its workers.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.db import connection

from tests.process.conftest import REPO_ROOT, WorkerProcess, assert_exit_codes
from tests.settings_scheduler import SCHEDULER_APPLICATION_NAME
from tests.worker.conftest import wait_for

SETTINGS = "tests.settings_scheduler"


class Schedulers:
    """Starts scheduler subprocesses for one test; :meth:`kill_all` ends every one of them."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started: list[WorkerProcess] = []
        self.database = str(connection.settings_dict["NAME"])

    def start(self, scheduler_id: str, *, log_level: str = "INFO") -> WorkerProcess:
        """Start ``jobs_scheduler`` with this id (answers at once)."""
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                [str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
            ),
            "PYTHONUNBUFFERED": "1",
            "ULTIMAT3_SCHEDULER_DB_NAME": self.database,
        }
        env.pop("DJANGO_SETTINGS_MODULE", None)
        command = [
            sys.executable,
            "-m",
            "django",
            "jobs_scheduler",
            "--settings",
            SETTINGS,
            "--scheduler-id",
            scheduler_id,
            "--log-level",
            log_level,
        ]
        log_path = self.tmp_path / f"scheduler-{len(self.started):02d}-{scheduler_id}.log"
        with open(log_path, "wb") as log:
            popen = subprocess.Popen(
                command,
                cwd=REPO_ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        process = WorkerProcess(popen, scheduler_id, log_path)
        self.started.append(process)
        return process

    def get(self, scheduler_id: str) -> WorkerProcess:
        (process,) = [p for p in self.started if p.worker_id == scheduler_id]
        return process

    def wait(self, predicate: Callable[[], Any], *, timeout: float, what: str) -> Any:
        """:func:`wait_for`, with every scheduler's log tail in the failure message."""
        try:
            return wait_for(predicate, timeout=timeout, what=what)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.report()}") from None

    def report(self) -> str:
        return "\n".join(process.tail() for process in self.started)

    def check_exit_codes(self) -> None:
        assert_exit_codes(self.started, self.report)

    def kill_all(self) -> None:
        for process in self.started:
            process.kill()
        wait_for(
            lambda: not scheduler_sessions(),
            timeout=30,
            what="the schedulers' database sessions closed",
        )


def scheduler_sessions() -> list[tuple[int, str]]:
    """``(pid, application_name)`` of the scheduler subprocesses' sessions on the test
    database."""
    with connection.cursor() as cursor:
        cursor.execute(
            "select pid, application_name from pg_stat_activity "
            "where datname = current_database() and pid <> pg_backend_pid() "
            "and application_name = %s",
            [SCHEDULER_APPLICATION_NAME],
        )
        return list(cursor.fetchall())
