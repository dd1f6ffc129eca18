"""Start-up: every installed app's jobs.py is discovered; a duplicate job name or a bad setting
stops the process with a clear error."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ultimat3_jobs.registry import registry

ROOT = Path(__file__).resolve().parents[2]


def test_installed_apps_jobs_modules_are_discovered_at_start_up() -> None:
    for name in ("tests.noop", "tests.echo", "tests.add", "tests.secret"):
        assert name in registry


def _start(settings_body: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    (tmp_path / "startup_settings.py").write_text(textwrap.dedent(settings_body))
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "startup_settings",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
    }
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); print('started')"],
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
def test_a_bad_setting_stops_start_up_naming_key_rule_and_value(tmp_path: Path) -> None:
    done = _start(
        """
        from tests.settings import *
        ULTIMAT3_JOBS = {**ULTIMAT3_JOBS, "VISIBILITY_TIMEOUT_SECONDS": float("nan")}
        """,
        tmp_path,
    )
    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr or "X_CONFIG_INVALID" in done.stderr
    assert "ULTIMAT3_JOBS['VISIBILITY_TIMEOUT_SECONDS'] must be a finite number" in done.stderr
    assert "got nan" in done.stderr


@pytest.mark.process
def test_good_settings_start(tmp_path: Path) -> None:
    done = _start("from tests.settings import *\n", tmp_path)
    assert done.returncode == 0, done.stderr
    assert "started" in done.stdout
