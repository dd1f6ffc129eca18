"""What the long-running commands do before their loop starts and after it ends: the project's
own system checks alone (a bad ``ULTIMAT3_JOBS`` still refuses the start; a failing check of
another app does not), the modules a worker imports (the admin's registrations, not its pages;
under the benchmark's settings no Django Tasks backend, and every one of the tree byte-compiled),
the worker's garbage collector tuned before its first claim, and a process exit that skips the
last garbage collections."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core import checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

from bench.support import COMPILED_SOURCES
from ultimat3_jobs.management.commands import jobs_relay, jobs_scheduler, jobs_worker

ROOT = Path(__file__).resolve().parents[2]
FOREIGN_CHECK_ID = "tests.E999"


def _foreign_check(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    return [checks.Error("another app's model check fails", id=FOREIGN_CHECK_ID)]


@pytest.fixture
def foreign_check() -> Iterator[None]:
    """A failing check of another app, tagged as Django's model checks are."""
    checks.register(_foreign_check, checks.Tags.models)
    try:
        yield
    finally:
        checks.registry.registry.registered_checks.discard(_foreign_check)


@pytest.fixture
def loops_ran(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each command's loop replaced by one that records its name and exits 0."""
    ran: list[str] = []

    def recorder(name: str) -> Callable[..., int]:
        def run(*args: Any, **kwargs: Any) -> int:
            ran.append(name)
            return 0

        return run

    monkeypatch.setattr(jobs_worker, "run_worker", recorder("jobs_worker"))
    monkeypatch.setattr(jobs_relay, "run_relay", recorder("jobs_relay"))
    monkeypatch.setattr(jobs_scheduler, "run_scheduler", recorder("jobs_scheduler"))
    return ran


COMMANDS = ["jobs_worker", "jobs_relay", "jobs_scheduler"]


@pytest.mark.usefixtures("foreign_check")
def test_a_failing_check_of_another_app_does_not_stop_a_loop_command(
    loops_ran: list[str],
) -> None:
    with pytest.raises(SystemCheckError, match=re.escape(FOREIGN_CHECK_ID)):
        call_command("check")  # manage.py check still runs every app's checks
    for name in COMMANDS:
        call_command(name, "--log-level", "WARNING", skip_checks=False)
    assert loops_ran == COMMANDS


@pytest.mark.parametrize("name", COMMANDS)
def test_a_bad_setting_still_refuses_a_loop_command_at_start(
    name: str, loops_ran: list[str]
) -> None:
    bad = {"DEFAULT_TENANT": "none", "DEFAULT_QUEUE": "has space"}
    with (
        override_settings(ULTIMAT3_JOBS=bad),
        pytest.raises(SystemCheckError, match=r"ultimat3_jobs\.E012"),
    ):
        call_command(name, "--log-level", "WARNING", skip_checks=False)
    assert loops_ran == []


# Everything ``manage.py jobs_worker`` imports before it claims: Django set up (the admin's
# autodiscovery included, which imports ``ultimat3_jobs.admin``) and the command's module.
IMPORTS_PROBE = """
import json, sys
import django
django.setup()
from django.core.management import load_command_class
load_command_class("ultimat3_jobs", "jobs_worker")
print(json.dumps(sorted(sys.modules)))
"""

# What the admin's pages and actions use, and a worker never runs (admin/deferred.py).
ADMIN_PAGES_ONLY = (
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


def test_a_worker_registers_the_admin_without_importing_its_pages() -> None:
    modules = set(json.loads(_run(IMPORTS_PROBE).stdout.splitlines()[-1]))
    assert "django.contrib.admin" in modules  # the settings install the admin
    assert "ultimat3_jobs.admin.jobs" in modules  # its ModelAdmins registered
    assert "ultimat3_jobs.runtime.worker.loop" in modules  # the command's own
    assert sorted(modules.intersection(ADMIN_PAGES_ONLY)) == []


# The loops a worker runs beside its own only when asked (``--with-relay``, ``--with-scheduler``).
BESIDE_ONLY = ("ultimat3_jobs.runtime.relay", "ultimat3_jobs.runtime.scheduler.scheduler")


# The same start, answering the files the modules came from.
FILES_PROBE = IMPORTS_PROBE.replace(
    "sorted(sys.modules)",
    "sorted({getattr(m, '__file__', None) or '' for m in [*sys.modules.values()]})",
)


def test_the_benchmark_byte_compiles_every_module_its_workers_import_from_the_tree() -> None:
    """``compile_sources`` covers each of them (``compileall``'s depth), so that no fresh worker
    the benchmark times compiles one from source."""
    files = json.loads(_run(FILES_PROBE, settings="bench.settings").stdout.splitlines()[-1])
    tree = [Path(file) for file in files if Path(file).is_relative_to(ROOT)]
    ours = [path for path in tree if not path.relative_to(ROOT).parts[0].startswith(".")]  # venvs
    assert Path(ROOT, "tests", "featureapp", "models.py") in ours  # the settings' apps are there
    uncovered = [str(path.relative_to(ROOT)) for path in ours if not _compiled(path)]
    assert uncovered == []


def _compiled(path: Path) -> bool:
    for name, depth in COMPILED_SOURCES.items():
        top = Path(ROOT, name)
        if path.is_relative_to(top) and (
            depth is None or len(path.relative_to(top).parts) <= depth + 1
        ):
            return True
    return False


def test_a_worker_imports_the_relay_and_the_scheduler_only_when_it_runs_them() -> None:
    modules = set(json.loads(_run(IMPORTS_PROBE).stdout.splitlines()[-1]))
    assert "ultimat3_jobs.runtime.process" in modules
    assert sorted(modules.intersection(BESIDE_ONLY)) == []


def test_a_worker_with_the_relay_and_the_scheduler_gets_their_configs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    given: dict[str, Any] = {}

    def run_worker(config: Any, **beside: Any) -> int:
        given.update(beside)
        return 0

    monkeypatch.setattr(jobs_worker, "run_worker", run_worker)
    call_command("jobs_worker", "--with-relay", "--with-scheduler", "--log-level", "WARNING")
    assert [type(config).__name__ for config in given.values()] == [
        "RelayConfig",
        "SchedulerConfig",
    ]


EXIT_PROBE = """
import atexit, gc, os, sys
import django
django.setup()
from ultimat3_jobs.runtime.process import run_alone

class Done:
    def run(self):
        return 0
    def request_stop(self, *, reason=""):
        pass

# Registered first, so it runs last: after what the loop registered.
atexit.register(lambda: print("frozen" if gc.get_freeze_count() else "collected"))
print("ran", run_alone(Done()), run_alone(Done()))
"""


def test_a_loop_process_skips_the_last_garbage_collections_at_exit() -> None:
    done = _run(EXIT_PROBE)
    assert done.stdout.split() == ["ran", "0", "0", "frozen"]


WORKER_PROBE = """
import gc
import django
django.setup()
from django.test import override_settings
from ultimat3_jobs.runtime.process import YOUNG_COLLECTION_THRESHOLD, run_worker, tune_collector
from ultimat3_jobs.runtime.worker.config import WorkerConfig

gc.set_threshold(700, 10, 10)
with override_settings(ULTIMAT3_JOBS={"DRIVER": "memory", "DEFAULT_TENANT": "none"}):
    code = run_worker(WorkerConfig.from_settings(burst=True))
print(code, gc.get_freeze_count() > 0, gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, 10, 10))
gc.set_threshold(0)
tune_collector()
print(gc.get_threshold()[0])
"""


def test_the_worker_freezes_its_start_up_heap_and_collects_the_young_less_often() -> None:
    done = _run(WORKER_PROBE)
    assert done.stdout.split() == ["0", "True", "True", "0"]


def _run(script: str, *, settings: str = "tests.settings") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": settings, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done
