"""Real ``jobs_worker`` subprocesses against the test database, and the fixture that owns them.

Each worker runs ``python -m django jobs_worker --settings tests.settings_process ...`` from the
repository root, logging to its own file under the test's ``tmp_path`` (the process and group
classes are ``tests/support/processes.py``'s). The ``workers`` fixture audits the exit codes,
kills every process it started and every process under them, and waits until their database
sessions are gone before pytest-django flushes the tables.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.settings_process import PROCESS_APPLICATION_NAME
from tests.support.processes import (
    LOG_TAIL_LINES,
    REPO_ROOT,
    ManagedProcess,
    ProcessGroup,
    assert_exit_codes,
    database_sessions,
    descendants,
    owned,
)
from ultimat3_jobs.drivers.postgres.listen import LISTEN_APPLICATION_NAME, PROBE_APPLICATION_NAME
from ultimat3_jobs.models import JobWorker

__all__ = [
    "LOG_TAIL_LINES",
    "REPO_ROOT",
    "WORKER_SESSIONS",
    "WorkerProcess",
    "Workers",
    "assert_exit_codes",
    "descendants",
    "worker_sessions",
    "workers",
]

WORKER_SESSIONS = (PROCESS_APPLICATION_NAME, LISTEN_APPLICATION_NAME, PROBE_APPLICATION_NAME)
"""``application_name`` of every session a worker subprocess opens (Django's, the wake
listener's and its probe's); the parent test's own session has none of them."""

WorkerProcess = ManagedProcess
"""One ``jobs_worker`` subprocess (its ``worker_id`` is its name)."""


class Workers(ProcessGroup):
    """Starts worker subprocesses for one test; the fixture kills them all at teardown."""

    def __init__(self, tmp_path: Path) -> None:
        super().__init__(
            tmp_path,
            settings="tests.settings_process",
            sessions=WORKER_SESSIONS,
            database_env={"ULTIMAT3_PROCESS_DB_NAME": "default"},
            log_prefix="worker-",
            started_marker="jobs.worker.started",
            what="workers",
        )
        self.database = self.databases["default"]

    def start(  # type: ignore[override]
        self,
        worker_id: str,
        *,
        queues: str = "default",
        concurrency: int = 2,
        extra: Sequence[str] = (),
        shutdown_grace: float | None = None,
        log_level: str = "INFO",
        launcher: str = "-m django",
        ack_flush: float | None = None,
    ) -> WorkerProcess:
        """Start ``jobs_worker`` (answers at once; see :meth:`wait_registered`), through
        ``python -m django`` or, with ``launcher="manage.py"``, the repository's ``manage.py``."""
        env = {}
        if shutdown_grace is not None:
            env["ULTIMAT3_PROCESS_SHUTDOWN_GRACE"] = str(shutdown_grace)
        if ack_flush is not None:
            env["ULTIMAT3_PROCESS_ACK_FLUSH"] = str(ack_flush)
        return self.command(
            worker_id,
            "jobs_worker",
            *("--queues", queues, "--concurrency", str(concurrency)),
            *("--worker-id", worker_id, "--log-level", log_level),
            *extra,
            program=["manage.py"] if launcher == "manage.py" else ["-m", "django"],
            env=env,
        )

    def wait_registered(self, *processes: WorkerProcess, timeout: float = 30) -> None:
        """Wait until each worker has written its ``x_job_workers`` row (it is claiming)."""
        ids = {p.worker_id for p in processes}
        self.wait(
            lambda: ids <= set(JobWorker.objects.filter(id__in=ids).values_list("id", flat=True)),
            timeout=timeout,
            what=f"workers {sorted(ids)} registered",
        )


def worker_sessions() -> list[tuple[int, str]]:
    """``(pid, application_name)`` of the worker subprocesses' sessions on the test database."""
    return [(pid, name) for pid, _, name, _ in database_sessions(WORKER_SESSIONS)]


@pytest.fixture
def workers(transactional_db: None, tmp_path: Path) -> Iterator[Workers]:
    """Depends on ``transactional_db``, so it is torn down before it: every subprocess is dead
    (and its sessions closed) before the tables are flushed."""
    yield from owned(Workers(tmp_path))
