"""The three systems of the side-by-side run: how each is installed, started and counted.

Each worker command is its project's documented one: ``jobs_worker`` for ours, ``pgq run
module:factory`` for pgqueuer, ``procrastinate --app=... worker`` for Procrastinate. Two processes
of each command drain the backlog.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

CONCURRENCY = 32
"""Slots per process for ours and Procrastinate (whose default is 1): the bench settings' own."""
PGQUEUER_BATCH = 10
"""``pgq run --batch-size``: pgqueuer's default, spelled out."""


@dataclass(frozen=True)
class System:
    key: str
    name: str
    version: str
    database: str
    side: str
    """The module run (``python -m``) for the enqueue and latency phases."""
    worker: tuple[str, ...]
    """The worker command; its first word is looked up in the system's interpreter's bin/."""
    pending_sql: str
    """Jobs not yet done, in the system's own tables."""
    reset_sql: str
    """Empties the system's job tables between rounds, its workers stopped."""
    install: tuple[str, ...] = ()
    """The peer's own schema install command, if any (run in its environment)."""
    packages: tuple[str, ...] = ()
    """What ``pip install`` puts in the peer's throw-away virtualenv."""

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"

    def venv(self, root: Path) -> Path | None:
        if not self.packages:
            return None
        return root / ".local" / "bench-venvs" / f"{self.key}-{self.version}"

    def python(self, root: Path) -> str:
        venv = self.venv(root)
        return sys.executable if venv is None else str(venv / "bin" / "python")

    def command(self, root: Path, words: tuple[str, ...]) -> list[str]:
        """``words`` with its program resolved in the system's environment."""
        program, *rest = words
        if program == "python":
            return [self.python(root), *rest]
        return [str(Path(self.python(root)).parent / program), *rest]

    def shown(self, words: tuple[str, ...]) -> str:
        return " ".join(words)


def ours(version: str, database: str) -> System:
    return System(
        key="ours",
        name="ultimat3-jobs",
        version=version,
        database=database,
        side="bench.peers.ours_side",
        worker=(
            "python",
            "-m",
            "django",
            "jobs_worker",
            "--settings",
            "bench.settings",
            "--concurrency",
            str(CONCURRENCY),
        ),
        pending_sql="select count(*) from x_jobs where state <> 'completed'",
        reset_sql="truncate x_jobs, x_job_counters, x_job_workers cascade",
    )


def pgqueuer(version: str, database: str) -> System:
    return System(
        key="pgqueuer",
        name="pgqueuer",
        version=version,
        database=database,
        side="bench.peers.pgqueuer_side",
        worker=(
            "pgq",
            "run",
            "bench.peers.pgqueuer_side:create_pgqueuer",
            "--batch-size",
            str(PGQUEUER_BATCH),
        ),
        pending_sql="select count(*) from pgqueuer",
        reset_sql="truncate pgqueuer, pgqueuer_log, pgqueuer_statistics",
        install=("pgq", "install"),
        # typer 0.29 hands ``pgq run`` its --log-level as a string, which pgqueuer 1.6 cannot use.
        packages=(f"pgqueuer=={version}", "asyncpg", "typer<0.29"),
    )


def procrastinate(version: str, database: str) -> System:
    return System(
        key="procrastinate",
        name="Procrastinate",
        version=version,
        database=database,
        side="bench.peers.procrastinate_side",
        worker=(
            "procrastinate",
            "--app=bench.peers.procrastinate_side.app",
            "worker",
            "--concurrency",
            str(CONCURRENCY),
        ),
        pending_sql="select count(*) from procrastinate_jobs where status in ('todo', 'doing')",
        reset_sql="truncate procrastinate_jobs, procrastinate_events, "
        "procrastinate_periodic_defers cascade",
        install=("procrastinate", "--app=bench.peers.procrastinate_side.app", "schema", "--apply"),
        packages=(f"procrastinate=={version}",),
    )
