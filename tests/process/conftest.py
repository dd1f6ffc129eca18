"""Real ``jobs_worker`` subprocesses against the test database, and the fixture that owns them.

Each worker runs ``python -m django jobs_worker --settings tests.settings_process ...`` from the
repository root, logging to its own file under the test's ``tmp_path``. The ``workers`` fixture
kills every process it started and every process under them (SIGKILL, then wait), and waits
until their database sessions are gone before pytest-django flushes the tables: a live session
would block the flush, and the ``DROP DATABASE`` at the end of the run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from tests.settings_process import PROCESS_APPLICATION_NAME
from tests.worker.conftest import wait_for
from ultimat3_jobs.drivers.postgres.listen import LISTEN_APPLICATION_NAME, PROBE_APPLICATION_NAME
from ultimat3_jobs.models import JobWorker

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKER_SESSIONS = (PROCESS_APPLICATION_NAME, LISTEN_APPLICATION_NAME, PROBE_APPLICATION_NAME)
"""``application_name`` of every session a worker subprocess opens (Django's, the wake
listener's and its probe's); the parent test's own session has none of them."""

LOG_TAIL_LINES = 30


class WorkerProcess:
    """One ``jobs_worker`` subprocess (the leader of its own process group)."""

    def __init__(self, popen: subprocess.Popen[bytes], worker_id: str, log_path: Path) -> None:
        self.popen = popen
        self.worker_id = worker_id
        self.log_path = log_path
        self.exited_at: float | None = None
        self._started = False
        self.allowed_exits: set[int] = {0}
        """Exit codes accepted when the process ends before teardown (see
        :meth:`Workers.check_exit_codes`); SIGKILL sent by the test adds -9."""
        self.killed_by_test = False

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
        session they run in), then reap it. The process is stopped first, so that it cannot
        start a child while its tree is read."""
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
        """Whether the worker logged that it started (its loop ran)."""
        if not self._started:
            self._started = "jobs.worker.started" in self.log()
        return self._started

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def tail(self, lines: int = LOG_TAIL_LINES) -> str:
        text = "\n".join(self.log().splitlines()[-lines:])
        head = f"--- {self.worker_id} (pid {self.pid}, exit code {self.popen.poll()})"
        return f"{head} {self.log_path}\n{text}"


class Workers:
    """Starts worker subprocesses for one test; the fixture kills them all at teardown."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started: list[WorkerProcess] = []
        self.database = str(connection.settings_dict["NAME"])

    def start(
        self,
        worker_id: str,
        *,
        queues: str = "default",
        concurrency: int = 2,
        extra: Sequence[str] = (),
        shutdown_grace: float | None = None,
        log_level: str = "INFO",
        launcher: str = "-m django",
    ) -> WorkerProcess:
        """Start ``jobs_worker`` (answers at once; see :meth:`wait_registered`), through
        ``python -m django`` or, with ``launcher="manage.py"``, the repository's ``manage.py``."""
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                [str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
            ),
            "PYTHONUNBUFFERED": "1",
            "ULTIMAT3_PROCESS_DB_NAME": self.database,
        }
        env.pop("DJANGO_SETTINGS_MODULE", None)
        if shutdown_grace is not None:
            env["ULTIMAT3_PROCESS_SHUTDOWN_GRACE"] = str(shutdown_grace)
        program = ["manage.py"] if launcher == "manage.py" else ["-m", "django"]
        command = [
            sys.executable,
            *program,
            "jobs_worker",
            "--settings",
            "tests.settings_process",
            "--queues",
            queues,
            "--concurrency",
            str(concurrency),
            "--worker-id",
            worker_id,
            "--log-level",
            log_level,
            *extra,
        ]
        log_path = self.tmp_path / f"worker-{len(self.started):02d}-{worker_id}.log"
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
        process = WorkerProcess(popen, worker_id, log_path)
        self.started.append(process)
        return process

    def wait_registered(self, *processes: WorkerProcess, timeout: float = 30) -> None:
        """Wait until each worker has written its ``x_job_workers`` row (it is claiming)."""
        ids = {p.worker_id for p in processes}
        self.wait(
            lambda: ids <= set(JobWorker.objects.filter(id__in=ids).values_list("id", flat=True)),
            timeout=timeout,
            what=f"workers {sorted(ids)} registered",
        )

    def wait(self, predicate: Callable[[], Any], *, timeout: float, what: str) -> Any:
        """:func:`wait_for`, with every worker's log tail in the failure message; fails at
        once when a worker exits without ever having started (a broken command line or
        start-up), rather than waiting out the timeout."""

        def checked() -> Any:
            self.check_started()
            return predicate()

        try:
            return wait_for(checked, timeout=timeout, what=what)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.report()}") from None

    def check_started(self) -> None:
        for process in self.started:
            if process.popen.poll() is not None and not process.ever_started():
                pytest.fail(f"worker {process.worker_id} exited before it started\n{self.report()}")

    def report(self) -> str:
        return "\n".join(process.tail() for process in self.started)

    def check_exit_codes(self) -> None:
        assert_exit_codes(self.started, self.report)

    def kill_all(self) -> None:
        failures = []
        for process in self.started:
            try:
                process.kill()
            except Exception as exc:  # kill the others first, then report
                failures.append(f"{process.worker_id}: {exc!r}")
        assert not failures, f"could not kill every worker: {failures}"
        wait_for(
            lambda: not worker_sessions(), timeout=30, what="the workers' database sessions closed"
        )


def assert_exit_codes(processes: Sequence[WorkerProcess], report: Callable[[], str]) -> None:
    """Every process that ended before teardown ended as its test expected: exit 0 (a burst
    run, a SIGTERM), -9 after a SIGKILL the test sent, or a code the test allowed with
    :meth:`WorkerProcess.expect_exit`. A process that crashed or exited 1 fails the test."""
    wrong = []
    for process in processes:
        code = process.popen.poll()
        if code is None:
            continue
        allowed = set(process.allowed_exits)
        if process.killed_by_test:
            allowed.add(-signal.SIGKILL)
        if code not in allowed:
            wrong.append(f"{process.worker_id} exited {code} (allowed: {sorted(allowed)})")
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


def worker_sessions() -> list[tuple[int, str]]:
    """``(pid, application_name)`` of the worker subprocesses' sessions on the test database."""
    with connection.cursor() as cursor:
        cursor.execute(
            "select pid, application_name from pg_stat_activity "
            "where datname = current_database() and pid <> pg_backend_pid() "
            "and application_name = any(%s)",
            [list(WORKER_SESSIONS)],
        )
        return list(cursor.fetchall())


@pytest.fixture
def workers(transactional_db: None, tmp_path: Path) -> Iterator[Workers]:
    """Depends on ``transactional_db``, so it is torn down before it: every subprocess is dead
    (and its sessions closed) before the tables are flushed."""
    started = Workers(tmp_path)
    try:
        yield started
        started.check_exit_codes()
    finally:
        started.kill_all()
