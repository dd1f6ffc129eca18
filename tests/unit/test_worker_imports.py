"""What a worker process imports before its first claim: Django's admin autodiscovery imports
``ultimat3_jobs.admin`` (its ModelAdmins register), but not the admin's pages nor what their views
and actions use (the operator verbs, the consumers' and subject requests' modules), which a
worker never runs. Each module is source the process compiles or unmarshals, then executes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Everything ``manage.py jobs_worker`` imports before it claims: Django set up (the admin's
# autodiscovery included) and the command's module.
PROBE = """
import json, sys
import django
django.setup()
from django.core.management import load_command_class
load_command_class("ultimat3_jobs", "jobs_worker")
print(json.dumps(sorted(sys.modules)))
"""

ADMIN_ONLY = (
    "ultimat3_jobs.admin.backfills",
    "ultimat3_jobs.admin.cancel",
    "ultimat3_jobs.admin.dashboard",
    "ultimat3_jobs.admin.job_page",
    "ultimat3_jobs.admin.queues",
    "ultimat3_jobs.admin.leases",
    "ultimat3_jobs.operator.introspection",
    "ultimat3_jobs.operator.leases",
    "ultimat3_jobs.operator.redaction",
    "ultimat3_jobs.operator.verbs",
    "ultimat3_jobs.consumers.declare",
    "ultimat3_jobs.consumers.loop",
    "ultimat3_jobs.subjects.requests",
)


def worker_modules() -> set[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_a_worker_registers_the_admin_without_importing_its_pages() -> None:
    modules = worker_modules()
    assert "django.contrib.admin" in modules  # the settings install the admin
    assert "ultimat3_jobs.admin.jobs" in modules  # its ModelAdmins registered
    assert "ultimat3_jobs.runtime.worker.loop" in modules  # the command's own
    assert sorted(modules.intersection(ADMIN_ONLY)) == []
