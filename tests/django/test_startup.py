"""Start-up: every installed app's jobs.py is discovered; a duplicate job name or a bad setting
stops the process with a clear error."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ultimat3_jobs.model.registry import registry

ROOT = Path(__file__).resolve().parents[2]


def test_installed_apps_jobs_modules_are_discovered_at_start_up() -> None:
    for name in ("tests.noop", "tests.echo", "tests.add", "tests.secret"):
        assert name in registry


def _start(
    settings_body: str, tmp_path: Path, command: str = "setup"
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "startup_settings.py").write_text(textwrap.dedent(settings_body))
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "startup_settings",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
    }
    argv = {
        "setup": ["-c", "import django; django.setup(); print('started')"],
        "check": ["-m", "django", "check"],
    }[command]
    return subprocess.run(
        [sys.executable, *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.process
def test_a_duplicate_job_name_stops_start_up(tmp_path: Path) -> None:
    done = _start(
        """
        from tests.settings import *
        INSTALLED_APPS = [*INSTALLED_APPS, "tests.dupapp"]
        """,
        tmp_path,
    )
    assert done.returncode != 0
    assert "started" not in done.stdout
    assert "X_JOB_NAME_DUPLICATE" in done.stderr
    assert "tests.testapp.jobs.echo" in done.stderr
    assert "tests.dupapp.jobs.echo_again" in done.stderr


@pytest.mark.process
def test_bad_settings_fail_the_system_checks_naming_key_rule_and_value(tmp_path: Path) -> None:
    done = _start(
        """
        from tests.settings import *
        ULTIMAT3_JOBS = {
            **ULTIMAT3_JOBS,
            "VISIBILITY_TIMEOUT_SECONDS": float("nan"),
            "WORKER_CONCURRENCY": 0,
        }
        """,
        tmp_path,
        command="check",
    )
    assert done.returncode != 0
    assert "ultimat3_jobs.E023" in done.stderr
    assert "ULTIMAT3_JOBS['VISIBILITY_TIMEOUT_SECONDS'] must be a finite number" in done.stderr
    assert "got nan" in done.stderr
    assert "ultimat3_jobs.E030" in done.stderr  # every problem at once, not just the first


@pytest.mark.process
def test_a_driver_that_cannot_be_imported_fails_the_checks(tmp_path: Path) -> None:
    done = _start(
        """
        from tests.settings import *
        ULTIMAT3_JOBS = {**ULTIMAT3_JOBS, "DRIVER": "no_such_module.Driver"}
        """,
        tmp_path,
        command="check",
    )
    assert done.returncode != 0
    assert "ultimat3_jobs.E010" in done.stderr
    assert "'no_such_module.Driver', which cannot be imported" in done.stderr


@pytest.mark.process
def test_good_settings_start(tmp_path: Path) -> None:
    done = _start("from tests.settings import *\n", tmp_path)
    assert done.returncode == 0, done.stderr
    assert "started" in done.stdout


@pytest.mark.process
def test_the_postgres_driver_on_a_sqlite_database_fails_the_checks(tmp_path: Path) -> None:
    sqlite = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(tmp_path / "db.sqlite3")}
    done = _start(
        f"""
        from tests.settings import *
        DATABASES = {{"default": {sqlite!r}}}
        ULTIMAT3_JOBS = {{**ULTIMAT3_JOBS, "DRIVER": "postgres"}}
        """,
        tmp_path,
        command="check",
    )
    assert done.returncode != 0
    assert "ultimat3_jobs.E050" in done.stderr
    assert "names the database alias 'default', a SQLite database" in done.stderr
