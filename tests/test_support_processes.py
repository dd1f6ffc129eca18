"""The shared subprocess helper (``tests/support/processes.py``) the worker, scheduler and relay
process tests stand on: it kills a whole process tree, audits exit codes, and fails fast on a
process that never started."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.settings_process import PROCESS_APPLICATION_NAME
from tests.support.processes import ProcessGroup, descendants, owned
from tests.worker.conftest import wait_for

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

SPAWN_ORPHAN = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'],"
    " start_new_session=True)\n"
    "print('child', child.pid, flush=True)\n"
    "print('jobs.worker.started', flush=True)\n"
    "time.sleep(120)\n"
)


def group(tmp_path: Path) -> ProcessGroup:
    return ProcessGroup(
        tmp_path,
        settings="tests.settings_process",
        sessions=(PROCESS_APPLICATION_NAME,),
        database_env={"ULTIMAT3_PROCESS_DB_NAME": "default"},
        started_marker="jobs.worker.started",
    )


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_kill_ends_a_child_in_another_session_and_the_audit_allows_the_kill(tmp_path) -> None:
    processes = group(tmp_path)
    fixture = owned(processes)
    next(fixture)
    parent = processes.start("parent", ["-c", SPAWN_ORPHAN])
    match = processes.wait_log(parent, r"^child (\d+)$", what="the child's pid")
    child = int(match.group(1))
    assert child in descendants(parent.pid)
    parent.kill()
    wait_for(lambda: not alive(child), timeout=10, what="the child killed with its parent")
    assert parent.popen.returncode == -signal.SIGKILL
    with pytest.raises(StopIteration):
        next(fixture)  # the audit accepts -9 after a kill the test sent


def test_an_unexpected_exit_code_fails_the_audit_unless_the_test_expected_it(tmp_path) -> None:
    processes = group(tmp_path)
    code = "print('jobs.worker.started', flush=True); raise SystemExit(3)"
    failing = processes.start("exit-3", ["-c", code])
    failing.wait(30)
    with pytest.raises(AssertionError, match=r"exit-3 exited 3 \(allowed: \[0\]\)"):
        processes.check_exit_codes()
    failing.expect_exit(3)
    processes.check_exit_codes()
    processes.kill_all()


def test_wait_fails_at_once_on_a_process_that_exited_before_it_started(tmp_path) -> None:
    processes = group(tmp_path)
    broken = processes.command("broken", "no_such_command")
    broken.wait(60)
    with pytest.raises(pytest.fail.Exception, match="broken exited before it started"):
        processes.wait(lambda: False, timeout=60, what="never")
    assert "no_such_command" in processes.report()
    broken.expect_exit(1)
    processes.kill_all()


def test_the_environment_carries_the_settings_and_the_database_names(tmp_path) -> None:
    processes = group(tmp_path)
    env = processes.env({"EXTRA": "1"})
    assert env["ULTIMAT3_PROCESS_DB_NAME"] == processes.databases["default"]
    assert "DJANGO_SETTINGS_MODULE" not in env and env["EXTRA"] == "1"
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(Path(__file__).resolve().parents[1])
    processes.settings_in_env = True
    assert processes.env()["DJANGO_SETTINGS_MODULE"] == "tests.settings_process"
