"""What starting a no-op job costs the worker's threads, counted rather than timed (the host is
shared and noisy): the loop's start of a batch of claimed runs (``Worker._start_waiting``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from tests.support.calls import calls_counted
from tests.worker.test_per_job_work import drain_counted


@pytest.fixture
def zips_built() -> Iterator[Counter[str]]:
    """Counts, on every thread, the ``zip(...)`` objects Python code builds."""
    with calls_counted("per-job zips", name_of=lambda c: "zip" if c is zip else None) as counts:
        yield counts


def test_a_no_op_jobs_start_builds_no_zip(make_worker, zips_built: Counter[str]) -> None:
    """Before: about 0.65 a job (0.88 in this drain), the starts' verdicts zipped with their
    runs even when every one was to run; its ``strict`` keyword, parsed per call, cost about
    1,000 instructions (callgrind)."""
    per_job = drain_counted(make_worker, zips_built)
    assert per_job.get("zip", 0) < 0.05, per_job
