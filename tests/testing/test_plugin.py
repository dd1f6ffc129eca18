"""The pytest plugin: registered by the package's entry point, harmless where it is unused."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

from tests.testing.conftest import calls
from tests.testing.jobs import other
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.testing import Jobs

ROOT = Path(__file__).resolve().parents[2]


def test_the_entry_point_names_the_plugin() -> None:
    plugins = {
        entry.name: entry.value for entry in importlib.metadata.entry_points(group="pytest11")
    }
    assert plugins.get("ultimat3_jobs") == "ultimat3_jobs.testing.pytest_plugin"


def test_the_jobs_fixture_exposes_every_helper(driver: JobDriver, jobs: Jobs) -> None:
    queued = other.using(delay=60).enqueue(n=4)

    assert jobs.assert_enqueued("testing.other", n=4).id == queued.id
    jobs.assert_not_enqueued("testing.other", n=5)
    assert [job.id for job in jobs.enqueued()] == [queued.id]
    assert jobs.run().attempts == 0
    assert jobs.travel(60) == [queued.id]
    assert jobs.run().completed == (queued.id,)
    assert calls("testing.other") == [4]
    with jobs.eager():
        other.enqueue(n=6)
    assert calls("testing.other") == [4, 6]


def test_the_plugin_loads_in_a_project_without_django(tmp_path: Path) -> None:
    """A pytest run with no Django settings at all loads the plugin and passes: the plugin
    imports nothing of the package beyond what ``import ultimat3_jobs`` does."""
    (tmp_path / "test_plain.py").write_text(
        "import sys\n"
        "def test_plain(request):\n"
        "    assert request.config.pluginmanager.hasplugin('ultimat3_jobs')\n"
        "    loaded = {m for m in sys.modules if m.startswith('ultimat3_jobs')}\n"
        "    assert 'ultimat3_jobs.testing.pytest_plugin' in loaded\n"
        "    assert loaded <= {'ultimat3_jobs', 'ultimat3_jobs.errors', 'ultimat3_jobs.types',\n"
        "                      'ultimat3_jobs.records', 'ultimat3_jobs.errors_base',\n"
        "                      'ultimat3_jobs.errors_features', 'ultimat3_jobs.lazy',\n"
        "                      'ultimat3_jobs.frozen',\n"
        "                      'ultimat3_jobs.testing', 'ultimat3_jobs.testing.pytest_plugin'},"
        " loaded\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-m", "pytest", "-p", "no:django", "-p", "no:cacheprovider"]
    run = subprocess.run(
        [*command, "-q", "test_plain.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout


def run_project(tmp_path: Path, ini: str) -> subprocess.CompletedProcess[str]:
    """Run pytest in a small Django project (the suite's settings, the memory driver) whose
    test enqueues one job and reports whether it ran."""
    (tmp_path / "inner_settings.py").write_text(
        "from tests.settings import *  # noqa: F403\n"
        "ULTIMAT3_JOBS = {'DRIVER': 'memory', 'DEFAULT_TENANT': 'none'}\n"
    )
    (tmp_path / "pytest.ini").write_text(
        f"[pytest]\nDJANGO_SETTINGS_MODULE = inner_settings\naddopts = --strict-config\n{ini}"
    )
    (tmp_path / "test_inner.py").write_text(
        "from tests.testing import jobs\n"
        "def test_enqueue():\n"
        "    jobs.CALLS.clear()\n"
        "    jobs.other.enqueue(n=1)\n"
        "    print('RAN' if jobs.CALLS else 'QUEUED')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env["PYTHONPATH"] = f"{tmp_path}{os.pathsep}{ROOT}"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-s", "test_inner.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_eager_ini_option_makes_every_test_eager(tmp_path: Path) -> None:
    run = run_project(tmp_path, "ultimat3_jobs_eager = true\n")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "RAN" in run.stdout

    run = run_project(tmp_path, "")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "QUEUED" in run.stdout
