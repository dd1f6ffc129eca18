"""``jobs_worker --processes 2``: a parent that runs two child workers.

Run through both ways of starting a management command: ``manage.py`` and ``python -m django``
(the parent restarts its children with its own command line).
"""

from __future__ import annotations

import signal
import time

import pytest

from tests.process.audit import audit, enqueue
from tests.process.conftest import WorkerProcess, Workers
from ultimat3_jobs.models import Job, JobWorker

pytestmark = [
    pytest.mark.process,
    pytest.mark.django_db(transaction=True),
    pytest.mark.parametrize("launcher", ["manage.py", "-m django"]),
]


def _no_crashed_child(parent: WorkerProcess, workers: Workers) -> None:
    """Fail at once when a child died (the supervisor logs each restart)."""
    if "jobs.worker.child_exited" in parent.log():
        pytest.fail(f"a child worker exited and was restarted\n{workers.report()}")


def test_burst_children_drain_the_queue_and_exit_0(workers: Workers, launcher: str) -> None:
    ids = enqueue("tests.record", [{"n": n, "sleep": 0.01} for n in range(200)])
    parent = workers.start(
        "sup", concurrency=2, extra=["--processes", "2", "--burst"], launcher=launcher
    )
    seen: set[str] = set()

    def exited() -> bool:
        _no_crashed_child(parent, workers)
        seen.update(JobWorker.objects.filter(id__startswith="sup").values_list("id", flat=True))
        return not parent.alive()

    workers.wait(exited, timeout=60, what="the burst supervisor exited")
    assert parent.wait(5) == 0, workers.report()
    assert seen == {"sup-0", "sup-1"}, workers.report()
    report = audit("tests.record", ids)
    assert report.problems() == [], workers.report()
    by_worker = set(Job.objects.filter(id__in=ids).values_list("worker_id", flat=True))
    assert by_worker == {"sup-0", "sup-1"}, f"both children ran jobs\n{workers.report()}"
    assert not JobWorker.objects.filter(id__startswith="sup").exists()
    log = parent.log()
    assert log.count("jobs.worker.stopped: sup-") == 2, workers.report()
    assert log.count("burst: nothing is due") == 2, workers.report()


def test_sigterm_to_the_parent_stops_the_children(workers: Workers, launcher: str) -> None:
    parent = workers.start("sup", concurrency=2, extra=["--processes", "2"], launcher=launcher)

    def both_registered() -> bool:
        _no_crashed_child(parent, workers)
        return set(JobWorker.objects.values_list("id", flat=True)) == {"sup-0", "sup-1"}

    workers.wait(both_registered, timeout=30, what="both children registered")
    pids = set(JobWorker.objects.values_list("pid", flat=True))
    assert parent.pid not in pids and len(pids) == 2
    started = time.monotonic()
    parent.signal(signal.SIGTERM)
    code = parent.wait(20)
    elapsed = time.monotonic() - started
    assert code == 0, workers.report()
    assert not JobWorker.objects.exists(), workers.report()
    for pid in pids:
        assert not _alive(pid), f"child {pid} outlived its parent\n{workers.report()}"
    log = parent.log()
    assert log.count("jobs.worker.stopped: sup-") == 2, workers.report()
    assert "restarting" not in log, workers.report()
    print(f"\n[supervisor/{launcher}] children and parent stopped {elapsed:.2f} s after SIGTERM")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False
