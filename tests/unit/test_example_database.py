"""The example project finds its database by itself: ``DATABASE_URL`` when set, else the demo's
embedded server, from the ``postmaster.pid`` a running server keeps in its data directory. So
``manage.py jobs ...`` works beside a running ``./scripts/demo`` with no variable to export."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db.backends.postgresql.client import DatabaseClient

from example_project.dburl import (
    DEMO_DATA_DIR,
    NoDatabaseURL,
    database_from_url,
    resolve_database_url,
    running_server_url,
)


def write_pid_file(data: Path, *, pid: int, port: int = 5433, socket_dir: str, listen: str = ""):
    """A ``postmaster.pid`` as PostgreSQL writes it (pid, data directory, start time, port,
    socket directory, listen address, shared memory key, status)."""
    data.mkdir(parents=True, exist_ok=True)
    lines = [str(pid), str(data), "1764590000", str(port), socket_dir, listen, "  0  0", "ready"]
    (data / "postmaster.pid").write_text("\n".join(lines) + "\n")


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_running_server_answers_its_socket_url(tmp_path: Path) -> None:
    data = tmp_path / "pgdata demo"
    write_pid_file(data, pid=os.getpid(), port=5433, socket_dir=str(data))
    url = running_server_url(data)
    assert url is not None
    database = database_from_url(url)
    assert (database["NAME"], database["USER"], database["PASSWORD"]) == (
        "postgres",
        "postgres",
        "",
    )
    assert database["ENGINE"] == "django.db.backends.postgresql"
    assert (database["HOST"], str(database["PORT"])) == (str(data), "5433")
    assert database["OPTIONS"] == {}


def test_a_server_on_tcp_only_answers_its_address(tmp_path: Path) -> None:
    write_pid_file(tmp_path, pid=os.getpid(), port=6543, socket_dir="", listen="*")
    database = database_from_url(running_server_url(tmp_path) or "")
    assert (database["HOST"], str(database["PORT"])) == ("127.0.0.1", "6543")


def test_no_server_answers_none(tmp_path: Path) -> None:
    assert running_server_url(tmp_path) is None  # no pid file
    write_pid_file(tmp_path, pid=dead_pid(), socket_dir=str(tmp_path))
    assert running_server_url(tmp_path) is None  # left behind by a killed server
    (tmp_path / "postmaster.pid").write_text("garbage\n")
    assert running_server_url(tmp_path) is None


def test_resolve_prefers_database_url(tmp_path: Path) -> None:
    write_pid_file(tmp_path / DEMO_DATA_DIR, pid=os.getpid(), socket_dir="/run/demo")
    given = "postgres://u:p@db.internal:5432/app"
    assert resolve_database_url({"DATABASE_URL": f" {given} "}, tmp_path) == given


def test_resolve_finds_the_running_demo_server(tmp_path: Path) -> None:
    write_pid_file(tmp_path / DEMO_DATA_DIR, pid=os.getpid(), port=5433, socket_dir="/run/demo")
    for environ in ({}, {"DATABASE_URL": ""}, {"DATABASE_URL": "  "}):
        url = resolve_database_url(environ, tmp_path)
        assert database_from_url(url)["HOST"] == "/run/demo"


def test_resolve_without_either_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(NoDatabaseURL, match=r"DATABASE_URL is not set.*\./scripts/demo"):
        resolve_database_url({}, tmp_path)


def test_the_example_settings_use_the_resolver() -> None:
    """The example project's settings load with no DATABASE_URL: from the demo's server when
    it runs, else refusing with the resolver's message (never "DATABASE_URL is not set" alone)."""
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL"}}
    env["DJANGO_SETTINGS_MODULE"] = "example_project.settings"
    probe = (
        "from django.conf import settings\n"
        "try:\n"
        "    print(settings.DATABASES['default']['NAME'])\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=root, env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    expected = running_server_url(root / DEMO_DATA_DIR)
    if expected is None:
        assert "ImproperlyConfigured" in out.stdout
        assert "demo's embedded PostgreSQL is not running" in out.stdout
    else:
        assert out.stdout.strip() == database_from_url(expected)["NAME"]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "postgres://postgres@127.0.0.1:5432/postgres",
            {"HOST": "127.0.0.1", "PORT": "5432", "NAME": "postgres", "USER": "postgres"},
        ),
        (
            "postgresql://postgres:@/postgres?host=/path/to/dir",
            {"HOST": "/path/to/dir", "PORT": "", "NAME": "postgres", "PASSWORD": ""},
        ),
        (
            "postgresql://postgres:@/postgres?host=/run/pg%20demo&port=5433",
            {"HOST": "/run/pg demo", "PORT": "5433", "OPTIONS": {}},
        ),
        (
            "postgres://u:p%40ss@[::1]:6543/my%2Fdb?sslmode=require",
            {"HOST": "::1", "PASSWORD": "p@ss", "NAME": "my/db", "OPTIONS": {"sslmode": "require"}},
        ),
    ],
)
def test_the_url_forms_in_use(url: str, expected: dict) -> None:
    database = database_from_url(url)
    seen = {key: str(database[key]) if key == "PORT" else database[key] for key in expected}
    assert seen == expected
    assert database["ENGINE"] == "django.db.backends.postgresql"
    assert (database["CONN_MAX_AGE"], database["CONN_HEALTH_CHECKS"]) == (60, True)


def test_a_schema_in_the_url_becomes_the_search_path() -> None:
    """``dj-database-url`` turns ``currentSchema`` into the ``options`` psycopg understands (the
    hand-written parser handed psycopg an option it refuses)."""
    database = database_from_url("postgres://u@h/db?currentSchema=app")
    assert database["OPTIONS"] == {"options": "-c search_path=app"}


def test_dbshell_finds_the_socket_directory() -> None:
    """The socket directory of a ``?host=`` URL is ``HOST``, where ``manage.py dbshell`` reads it
    (``dj-database-url`` alone leaves it in ``OPTIONS``)."""
    database = database_from_url("postgresql://postgres:@/postgres?host=/run/demo&port=5433")
    args, _ = DatabaseClient.settings_to_cmd_args_env(database, [])
    assert args[args.index("-h") + 1] == "/run/demo"
    assert args[args.index("-p") + 1] == "5433"


@pytest.mark.parametrize(
    "url", ["mysql://u@h/db", "sqlite:///db.sqlite3", "postgres://u@h:99999/x"]
)
def test_a_url_that_is_not_a_postgresql_one_is_refused(url: str) -> None:
    with pytest.raises(ValueError):
        database_from_url(url)
