"""The per-job Python of one ``enqueue_many`` call on PostgreSQL, counted, not timed: the calls
made for each job (``sys.monitoring`` CALL events: Python functions and C functions alike),
taken as the difference between a call of 2N jobs and one of N, so the call's fixed cost (the
options' checks, the statements, the connection) drops out."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from tests.testapp.jobs import noop

pytestmark = pytest.mark.django_db(transaction=True)

N = 2000
"""Both calls counted write several chunks (one COPY each)."""


@contextmanager
def calls_counted() -> Iterator[Counter[str]]:
    """Every call made from Python code while open, and those of ``object.__setattr__``."""
    monitoring = sys.monitoring
    tool = next(t for t in range(2, 6) if monitoring.get_tool(t) is None)
    counts: Counter[str] = Counter()
    setattr_ = object.__setattr__

    def called(code: object, offset: int, callable_: object, arg0: object) -> object:
        counts["calls"] += 1
        if callable_ is setattr_:
            counts["object.__setattr__"] += 1
        return None

    monitoring.use_tool_id(tool, "enqueue_many counts")
    monitoring.register_callback(tool, monitoring.events.CALL, called)
    monitoring.set_events(tool, monitoring.events.CALL)
    try:
        yield counts
    finally:
        monitoring.set_events(tool, 0)
        monitoring.register_callback(tool, monitoring.events.CALL, None)
        monitoring.free_tool_id(tool)


def per_job(enqueue: Callable[[int], object]) -> dict[str, float]:
    enqueue(2)  # the connection opened and the statements prepared before anything counts
    with calls_counted() as once:
        enqueue(N)
    with calls_counted() as twice:
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
