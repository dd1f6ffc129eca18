"""What a run under a cap costs the worker beyond a free run's, counted rather than timed (the
host is shared and noisy): a drain of no-op jobs under a keyless cap wider than the worker, so
that every run is granted a slot or lent one (``handoff.py``) and no run is shed.

Two costs were found there and removed: the lease bookkeeping (``holdings.py``, the gate, the
hand-offs) looked runs up by pairs of their job id and claim token, two ``uuid.UUID`` hashed in
Python per look-up, about 28 per run by 8 slots; and the lease requests of a keyless cap, the
same for every run, were built again (frozen records, their key quoted) about 1.1 times a run.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest

from tests.limits import jobs
from tests.worker import test_per_job_work as per_job_work
from tests.worker.test_per_job_work import CountingLock
from ultimat3_jobs.drivers import leases_seam
from ultimat3_jobs.runtime.worker import Worker


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts ``uuid.UUID.__hash__`` calls and ``LeaseRequest`` constructions, any thread."""
    counts: Counter[str] = Counter()
    uuid_hash = uuid.UUID.__hash__
    request_init = leases_seam.LeaseRequest.__init__

    def hashed(self: uuid.UUID) -> int:
        counts["uuid hash"] += 1
        return uuid_hash(self)

    def request(self: Any, *args: Any, **kwargs: Any) -> None:
        counts["lease request"] += 1
        request_init(self, *args, **kwargs)

    monkeypatch.setattr(uuid.UUID, "__hash__", hashed)
    monkeypatch.setattr(leases_seam.LeaseRequest, "__init__", request)
    return counts


def drain_counted(make_worker: Any, counts: Counter[str]) -> dict[str, float]:
    """``counts`` per run over a drain of capped no-op jobs by 8 slots, heartbeats off; the
    holdings' lock acquisitions counted as ``holdings lock``."""

    def counting(worker: Worker) -> None:
        worker._limits.gate.holdings._lock = CountingLock(counts, "holdings lock")

    return per_job_work.drain_counted(make_worker, counts, before=counting, handle=jobs.capped)


def test_a_capped_no_op_run_hashes_its_ids_a_few_times_and_builds_no_request(
    make_worker, counted: Counter[str]
) -> None:
    """Before: about 28 id hashes per run (a free run: at most 4) and 1.1 lease requests
    built; now the holdings key runs by their attempt, hashed by identity, and a keyless
    cap's requests are worked out once per declaration."""
    per_run = drain_counted(make_worker, counted)
    assert per_run.get("uuid hash", 0) <= 6, per_run
    assert per_run.get("lease request", 0) < 0.05, per_run


def test_a_capped_no_op_run_takes_the_holdings_lock_a_few_times(make_worker) -> None:
    """Before: about 8.4 rounds of the holdings' lock per run (now about 6), where a settle
    asked of each run whether its row was its own, lent, ridden, and of which key, each
    apart, and asked whether a run whose slot had just been lent on still sat on it."""
    per_run = drain_counted(make_worker, Counter())
    assert per_run.get("holdings lock", 0) <= 7, per_run
