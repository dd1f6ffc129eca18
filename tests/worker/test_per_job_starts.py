"""What a no-op job costs the worker's threads, counted rather than timed (the host is shared and
noisy): the loop's start of a batch of claimed runs (``Worker._start_waiting``), and the records
built per job (the claimed job, its outcome, its settle item)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.calls import calls_counted
from tests.worker.test_per_job_work import drain_counted
from ultimat3_jobs.model import tenancy
from ultimat3_jobs.runtime.worker.attempt import Outcome
from ultimat3_jobs.types import ClaimedJob, SettleItem


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


@pytest.fixture
def records_called() -> Iterator[Counter[str]]:
    """Counts, on every thread, the calls of the per-job record classes themselves."""
    classes = {ClaimedJob: "ClaimedJob", Outcome: "Outcome", SettleItem: "SettleItem"}

    def name_of(callable_: object) -> str | None:
        return classes.get(callable_) if isinstance(callable_, type) else None

    with calls_counted("per-job records", name_of=name_of) as counts:
        yield counts


def test_a_no_op_jobs_records_are_built_without_their_class_call(
    make_worker, records_called: Counter[str]
) -> None:
    """Before: one call a job of each class (the claimed job, its outcome, its settle item),
    whose keywords became a new dict and whose ``__init__`` set each slot through its
    descriptor: about 13,700 instructions a record of seven to ten fields (callgrind); their
    builders (``quick_new``) take about 5,200."""
    per_job = drain_counted(make_worker, records_called)
    assert all(per_job.get(name, 0) < 0.05 for name in ("ClaimedJob", "Outcome")), per_job
    assert per_job.get("SettleItem", 0) < 0.05, per_job


def test_a_no_op_jobs_scope_is_built_without_a_keyword(
    make_worker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: ``TenantScope(tenant, job=ctx)`` around every body, a class called with a
    keyword, which copies it into a new dict; ``job`` comes by position now."""
    counts: Counter[str] = Counter()
    init = tenancy.TenantScope.__init__

    def counting(self: tenancy.TenantScope, *args: Any, **kwargs: Any) -> None:
        counts["scope"] += 1
        counts["scope keyword"] += bool(kwargs)
        init(self, *args, **kwargs)

    monkeypatch.setattr(tenancy.TenantScope, "__init__", counting)
    per_job = drain_counted(make_worker, counts)
    assert per_job.get("scope", 0) >= 1, per_job
    assert per_job.get("scope keyword", 0) < 0.05, per_job
