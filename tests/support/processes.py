"""Real ``python -m django <command>`` subprocesses against the test databases, for the process
tests of the worker, the scheduler and the relay.

A :class:`ManagedProcess` is one subprocess, the leader of its own session, writing to its own
log file under the test's ``tmp_path``. A :class:`ProcessGroup` starts them for one test, with
one settings module, one environment (the names of the databases pytest-django created for this
run) and the ``application_name`` of every database session its processes open. Its
:func:`owned` fixture body audits the exit codes, then kills every process it started and every
process under them, and waits until their sessions are gone before pytest-django flushes the
tables: a live session would block the flush, and the ``DROP DATABASE`` at the end of the run.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

from tests.worker.conftest import wait_for

REPO_ROOT = Path(__file__).resolve().parents[2]
LOG_TAIL_LINES = 30
DJANGO = ("-m", "django")


class ManagedProcess:
    """One subprocess (the leader of its own process group)."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        name: str,
        log_path: Path,
        *,
        started_marker: str = "jobs.worker.started",
        tail_lines: int = LOG_TAIL_LINES,
    ) -> None:
        self.popen = popen
        self.name = name
        self.log_path = log_path
        self.started_marker = started_marker
        self.tail_lines = tail_lines
        self.exited_at: float | None = None
        self._started = False
        self.allowed_exits: set[int] = {0}
        """Exit codes accepted when the process ends before teardown (see
        :func:`assert_exit_codes`); SIGKILL sent by the test adds -9."""
        self.killed_by_test = False

    @property
    def worker_id(self) -> str:
        """The id it was started with (``--worker-id``, ``--scheduler-id``...): its name."""
        return self.name

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def signal(self, signum: int) -> None:
        if signum == signal.SIGKILL:
            self.killed_by_test = True
        self.popen.send_signal(signum)

    def expect_exit(self, *codes: int) -> None:
        """Accept these exit codes too (e.g. 1 for a body that calls ``os._exit(1)``)."""
        self.allowed_exits.update(codes)

    def wait(self, timeout: float) -> int:
        code = self.popen.wait(timeout)
        if self.exited_at is None:
            self.exited_at = time.monotonic()
        return code

    def kill(self) -> None:
        """SIGKILL the process and every process under it (a supervisor's children, whatever
        session they run in), then its group, then reap it. The process is stopped first, so
        that it cannot start a child while its tree is read."""
        tree: list[int] = []
        self.killed_by_test = True
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGSTOP)
            tree = [self.pid, *descendants(self.pid)]
        for pid in tree:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        self.wait(30)

    def ever_started(self) -> bool:
        """Whether the process logged its start marker (its loop ran)."""
        if not self._started:
            self._started = self.started_marker in self.log()
        return self._started

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def tail(self, lines: int | None = None) -> str:
        text = "\n".join(self.log().splitlines()[-(lines or self.tail_lines) :])
        head = f"--- {self.name} (pid {self.pid}, exit code {self.popen.poll()})"
        return f"{head} {self.log_path}\n{text}"


class ProcessGroup:
    """Starts subprocesses for one test, all with one settings module and environment."""

    def __init__(
        self,
        tmp_path: Path,
        *,
        settings: str,
        sessions: Sequence[str],
        database_env: Mapping[str, str],
        settings_in_env: bool = False,
        log_prefix: str = "",
        started_marker: str | None = None,
        tail_lines: int = LOG_TAIL_LINES,
        report_last: int | None = None,
        audit_exits: bool = True,
        what: str = "subprocesses",
    ) -> None:
        """``sessions``: the ``application_name`` of every database session the processes open
        (the test's own session has none of them). ``database_env``: environment variable ->
        database alias whose test database name it carries. ``settings_in_env``: also set
        ``DJANGO_SETTINGS_MODULE`` (for a plain ``python -m module``), otherwise it is removed.
        ``started_marker``: a log line a process writes once running; set, a process that
        exits without it fails the next :meth:`wait` at once. ``report_last``: how many of the
        last processes' logs a failure shows (all when ``None``)."""
        self.tmp_path = tmp_path
        self.settings = settings
        self.session_names = tuple(sessions)
        self.database_env = dict(database_env)
        self.databases = {
            alias: str(connections[alias].settings_dict["NAME"])
            for alias in dict.fromkeys(self.database_env.values())
        }
        self.settings_in_env = settings_in_env
        self.log_prefix = log_prefix
        self.started_marker = started_marker
        self.tail_lines = tail_lines
        self.report_last = report_last
        self.audit_exits = audit_exits
        self.what = what
        self.started: list[ManagedProcess] = []

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                [str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
            ),
            "PYTHONUNBUFFERED": "1",
            **{name: self.databases[alias] for name, alias in self.database_env.items()},
            **(extra or {}),
        }
        if self.settings_in_env:
            env["DJANGO_SETTINGS_MODULE"] = self.settings
        else:
            env.pop("DJANGO_SETTINGS_MODULE", None)
        return env

    def start(
        self, name: str, argv: Sequence[str], *, env: Mapping[str, str] | None = None
    ) -> ManagedProcess:
        """Start ``python <argv>`` (a group for one command gives ``start`` its own options)."""
        return self.spawn(name, argv, env=env)

    def spawn(
        self, name: str, argv: Sequence[str], *, env: Mapping[str, str] | None = None
    ) -> ManagedProcess:
        """Start ``python <argv>`` from the repository root (answers at once)."""
        log_path = self.tmp_path / f"{self.log_prefix}{len(self.started):02d}-{name}.log"
        with open(log_path, "wb") as log:
            popen = subprocess.Popen(
                [sys.executable, *argv],
                cwd=REPO_ROOT,
                env=self.env(env),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        process = ManagedProcess(
            popen,
            name,
            log_path,
            started_marker=self.started_marker or "",
            tail_lines=self.tail_lines,
        )
        self.started.append(process)
        return process

    def command(
        self,
        name: str,
        command: str,
        *args: str,
        program: Sequence[str] = DJANGO,
        env: Mapping[str, str] | None = None,
    ) -> ManagedProcess:
        """``python -m django <command> --settings <settings> <args>`` (or another
        ``program``, e.g. ``manage.py``)."""
        return self.spawn(name, [*program, command, "--settings", self.settings, *args], env=env)

    def get(self, name: str) -> ManagedProcess:
        (process,) = [p for p in self.started if p.name == name]
        return process

    def wait(
        self, predicate: Callable[[], Any], *, timeout: float, what: str, poll: float = 0.02
    ) -> Any:
        """Poll ``predicate`` until it answers something truthy; fail after ``timeout``, or at
        once when a process exits without ever having started (a broken command line or
        start-up), with the processes' log tails in the message."""
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                self.check_started()
                value = predicate()
                if value:
                    return value
                time.sleep(poll)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.report()}") from None
        raise AssertionError(f"timed out waiting for {what or predicate}\n{self.report()}")

    def wait_log(
        self, process: ManagedProcess, pattern: str, *, timeout: float = 20, what: str = ""
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

    def check_started(self) -> None:
        if self.started_marker is None:
            return
        for process in self.started:
            if process.popen.poll() is not None and not process.ever_started():
                pytest.fail(f"{process.name} exited before it started\n{self.report()}")

    def report(self, last: int | None = None) -> str:
        """The log tails of the ``last`` processes started (all by default)."""
        last = last or self.report_last or len(self.started)
        earlier = len(self.started) - last
        head = [f"({earlier} earlier processes not shown)"] if earlier > 0 else []
        return "\n".join([*head, *(process.tail() for process in self.started[-last:])])

    def check_exit_codes(self) -> None:
        assert_exit_codes(self.started, self.report)

    def sessions(self) -> list[tuple[int, str, str, str]]:
        """``(pid, database, application_name, state)`` of the processes' sessions."""
        return database_sessions(self.session_names, self.databases.values())

    def kill_all(self) -> None:
        failures = []
        for process in self.started:
            try:
                process.kill()
            except Exception as exc:  # kill the others first, then report
                failures.append(f"{process.name}: {exc!r}")
        assert not failures, f"could not kill every process: {failures}"
        wait_for(
            lambda: not self.sessions(),
            timeout=30,
            what=f"the {self.what}' database sessions closed",
        )


def owned(group: ProcessGroup) -> Iterator[ProcessGroup]:
    """The body of a fixture that owns ``group``: ``yield from owned(Group(tmp_path))``. Request
    ``transactional_db`` in that fixture, so that it is torn down before it: every subprocess is
    dead (and its sessions closed) before the tables are flushed."""
    try:
        yield group
        if group.audit_exits:
            group.check_exit_codes()
    finally:
        group.kill_all()


def assert_exit_codes(processes: Sequence[ManagedProcess], report: Callable[[], str]) -> None:
    """Every process that ended before teardown ended as its test expected: exit 0 (a burst
    run, a SIGTERM), -9 after a SIGKILL the test sent, or a code the test allowed with
    :meth:`ManagedProcess.expect_exit`. A process that crashed or exited 1 fails the test."""
    wrong = []
    for process in processes:
        code = process.popen.poll()
        if code is None:
            continue
        allowed = set(process.allowed_exits)
        if process.killed_by_test:
            allowed.add(-signal.SIGKILL)
        if code not in allowed:
            wrong.append(f"{process.name} exited {code} (allowed: {sorted(allowed)})")
    assert not wrong, f"processes ended with unexpected exit codes: {wrong}\n{report()}"


def descendants(pid: int) -> list[int]:
    """Every live process under ``pid`` (children, grandchildren...), read from ``/proc``."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found: list[int] = []
    pending = [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


def database_sessions(
    names: Sequence[str], databases: Any = None
) -> list[tuple[int, str, str, str]]:
    """``(pid, database, application_name, state)`` of the sessions named ``names`` on
    ``databases`` (default: the test database), the asking session left out."""
    databases = list(databases or [connections["default"].settings_dict["NAME"]])
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "select pid, datname, application_name, coalesce(state, '') "
            "from pg_stat_activity "
            "where datname = any(%s) and pid <> pg_backend_pid() "
            "and application_name = any(%s)",
            [databases, list(names)],
        )
        return list(cursor.fetchall())
