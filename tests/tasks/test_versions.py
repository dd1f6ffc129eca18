"""Django versions: the backend needs django.tasks (6.0+); per-task options need 6.1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import django
import pytest

ROOT = Path(__file__).resolve().parents[2]

WITHOUT_TASKS_FRAMEWORK = """
import sys
sys.modules["django.tasks"] = None  # what Django 5.2 looks like to an import
import django
django.setup()
from django.core.exceptions import ImproperlyConfigured
try:
    import ultimat3_jobs.tasks
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
    assert "refused: ultimat3_jobs.tasks.JobsBackend needs Django's Tasks framework" in done.stdout
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
