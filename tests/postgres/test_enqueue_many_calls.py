"""The per-job Python of one ``enqueue_many`` call on PostgreSQL, counted, not timed: the calls
made for each job (``sys.monitoring`` CALL events: Python functions and C functions alike),
taken as the difference between a call of 2N jobs and one of N, so the call's fixed cost (the
options' checks, the statements, the connection) drops out."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.support.calls import calls_counted
from tests.testapp.jobs import noop

pytestmark = pytest.mark.django_db(transaction=True)

N = 2000
"""Both calls counted write several chunks (one COPY each)."""


def per_job(enqueue: Callable[[int], object]) -> dict[str, float]:
    enqueue(2)  # the connection opened and the statements prepared before anything counts
    with calls_counted("enqueue_many counts") as once:
        enqueue(N)
    with calls_counted("enqueue_many counts") as twice:
        enqueue(2 * N)
    return {what: (twice[what] - once[what]) / N for what in twice | once}


def test_enqueue_many_makes_few_calls_per_job() -> None:
    """Before: about 25 calls per job of ``{}``, 4 of them ``object.__setattr__`` (the id's two
    slots, the answer's two fields), one more to mint each id (``_uuid_of``), and the tenant of
    a job with no tenant rule asked per job and appended per job. Now each id's and each
    answer's slots are set through their own descriptors, the ids are minted inline, and the
    tenant of a ``tenant="none"`` job is asked once per call: about 22."""
    counts = per_job(lambda n: noop.enqueue_many([{} for _ in range(n)]))
    assert counts.get("object.__setattr__", 0) < 0.01, counts
    assert counts["calls"] <= 22.5, counts
