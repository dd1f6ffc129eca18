"""Django versions: the backend needs django.tasks (6.0+); per-task options need 6.1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import django
import pytest

ROOT = Path(__file__).resolve().parents[2]

# On Django 5.2 the suite's settings leave TASKS out (the backend would refuse to load).
pytestmark = pytest.mark.skipif(django.VERSION < (6, 0), reason="django.tasks needs Django 6.0+")

WITHOUT_TASKS_FRAMEWORK = """
import sys
sys.modules["django.tasks"] = None  # what Django 5.2 looks like to an import
import django
from django.core.exceptions import ImproperlyConfigured
try:
    django.setup()  # TASKS names the backend, so start-up loads it
except ImproperlyConfigured as exc:
    print("refused:", exc)
"""


def test_without_django_tasks_the_backend_is_refused_clearly() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_TASKS_FRAMEWORK],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (
        "refused: ultimat3_jobs.contrib.django_tasks.JobsBackend needs Django's Tasks framework"
        in done.stdout
    )
    assert "Django 6.0" in done.stdout


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(django.VERSION < (6, 1), reason="@task(**kwargs) arrived in Django 6.1")
def test_per_task_options_reach_the_backend(make_worker) -> None:
    from django.tasks import TaskResultStatus

    from tests.testapp import tasks
    from tests.worker.conftest import wait_for

    result = tasks.fails_once_for_good.enqueue()
    make_worker()

    def finished() -> bool:
        result.refresh()
        return result.is_finished

    wait_for(finished)
    assert result.status == TaskResultStatus.FAILED
    assert result.attempts == 1, "max_attempts=1 on the task overrides OPTIONS' 3"


@pytest.mark.process
@pytest.mark.django_db(transaction=True)
def test_a_plain_worker_process_runs_tasks_it_never_imported() -> None:
    """``manage.py jobs_worker`` imports no task module; the app loads the backend at start-up
    so the worker resolves ``django.tasks:`` jobs on its own."""
    from django.db import connection
    from django.tasks import TaskResultStatus

    from tests.testapp import tasks

    result = tasks.add.enqueue(20, 22)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "django",
            "jobs_worker",
            "--settings",
            "tests.settings_process",
            "--burst",
            "--log-level",
            "WARNING",
        ],
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "ULTIMAT3_PROCESS_DB_NAME": connection.settings_dict["NAME"],
        },
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL, done.stderr[-2000:]
    assert result.return_value == 42
