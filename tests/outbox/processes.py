"""Subprocesses for the outbox tests: relays, workers with a relay beside them, and callers.

Each runs with ``--settings tests.settings_outbox`` (or ``DJANGO_SETTINGS_MODULE`` set to it),
pointed at the two databases pytest-django created for this run, from the repository root, in a
process group of its own, writing to its own log file under the test's ``tmp_path``. The
``processes`` fixture (``conftest.py``) SIGKILLs every one it started and waits until their
database sessions are gone, so that pytest-django can flush the tables and, at the end, drop
the databases.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from django.db import connections

from tests.settings_outbox import OUTBOX_APPLICATION_NAME
from tests.worker.conftest import wait_for
from ultimat3_jobs.drivers.postgres.listen import LISTEN_APPLICATION_NAME, PROBE_APPLICATION_NAME

REPO_ROOT = Path(__file__).resolve().parents[2]
SETTINGS = "tests.settings_outbox"
SESSIONS = (OUTBOX_APPLICATION_NAME, LISTEN_APPLICATION_NAME, PROBE_APPLICATION_NAME)
"""``application_name`` of every session a subprocess opens: Django's (both aliases), the wake
listener's and its probe's."""

RELAY_STARTED = "jobs.relay.started"
WORKER_STARTED = "jobs.worker.started"
LOG_TAIL_LINES = 40


class Process:
    """One subprocess, the leader of its own process group."""

    def __init__(self, popen: subprocess.Popen[bytes], name: str, log_path: Path) -> None:
        self.popen = popen
        self.name = name
        self.log_path = log_path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> None:
        """SIGKILL the whole group and reap the leader."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait(30)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def tail(self, lines: int = LOG_TAIL_LINES) -> str:
        text = "\n".join(self.log().splitlines()[-lines:])
        return f"--- {self.name} (pid {self.pid}, exit {self.popen.poll()})\n{text}"


class Processes:
    """Starts subprocesses for one test; :meth:`kill_all` ends them and waits out their
    sessions."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started: list[Process] = []
        self.databases = {
            alias: str(connections[alias].settings_dict["NAME"]) for alias in ("default", "jobs")
        }

    def env(self) -> dict[str, str]:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                [str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
            ),
            "PYTHONUNBUFFERED": "1",
            "DJANGO_SETTINGS_MODULE": SETTINGS,
            "ULTIMAT3_OUTBOX_DB_NAME": self.databases["default"],
            "ULTIMAT3_OUTBOX_JOBS_DB_NAME": self.databases["jobs"],
        }
        return env

    def start(self, name: str, argv: Sequence[str]) -> Process:
        """Start ``python <argv>`` (answers at once)."""
        log_path = self.tmp_path / f"{len(self.started):02d}-{name}.log"
        with open(log_path, "wb") as log:
            popen = subprocess.Popen(
                [sys.executable, *argv],
                cwd=REPO_ROOT,
                env=self.env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        process = Process(popen, name, log_path)
        self.started.append(process)
        return process

    def command(self, name: str, command: str, *args: str) -> Process:
        """``python -m django <command> --settings tests.settings_outbox <args>``."""
        return self.start(name, ["-m", "django", command, "--settings", SETTINGS, *args])

    def relay(self, name: str) -> Process:
        return self.command(name, "jobs_relay", "--relay-id", name)

    def wait_log(
        self, process: Process, pattern: str, *, timeout: float = 20, what: str = ""
    ) -> re.Match[str]:
        """Wait until ``process``'s log matches ``pattern``; fail early if it exited."""
        compiled = re.compile(pattern, re.MULTILINE)

        def found() -> re.Match[str] | None:
            match = compiled.search(process.log())
            if match is None and not process.alive():
                raise AssertionError(f"{process.name} exited first\n{process.tail()}")
            return match

        match: re.Match[str] = self.wait(found, timeout=timeout, what=what or pattern, poll=0.005)
        return match

    def wait(
        self, predicate: Callable[[], Any], *, timeout: float, what: str, poll: float = 0.02
    ) -> Any:
        """Poll ``predicate`` until it answers something truthy; fail after ``timeout`` with
        every log's tail in the message."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(poll)
        raise AssertionError(f"timed out waiting for {what}\n{self.report()}")

    def report(self, last: int = 4) -> str:
        """The log tails of the ``last`` processes started (the ones still relevant)."""
        earlier = len(self.started) - last
        head = [f"({earlier} earlier processes not shown)"] if earlier > 0 else []
        return "\n".join([*head, *(process.tail() for process in self.started[-last:])])

    def sessions(self) -> list[tuple[int, str, str, str]]:
        """``(pid, database, application_name, state)`` of the subprocesses' sessions on this
        run's two databases."""
        with connections["default"].cursor() as cursor:
            cursor.execute(
                "select pid, datname, application_name, coalesce(state, '') "
                "from pg_stat_activity "
                "where datname = any(%s) and pid <> pg_backend_pid() "
                "and application_name = any(%s)",
                [list(self.databases.values()), list(SESSIONS)],
            )
            return list(cursor.fetchall())

    def kill_all(self) -> None:
        for process in self.started:
            process.kill()
        wait_for(
            lambda: not self.sessions(),
            timeout=30,
            what="the subprocesses' database sessions closed",
        )
