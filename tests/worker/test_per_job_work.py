"""What a no-op job costs the worker, counted rather than timed (the host is shared and noisy).

A job's path through the worker (claim, start, body, ending, settle) runs once per job on every
drain. Two costs were found there and removed: the job's ids, ``uuid.UUID`` objects whose hash
is a Python call, were hashed about 20 times per job (pairs of two looked up in the lease slot
maps even when no run holds a slot, sets of ids built and searched per flush); and every
attempt's ``ctx.cancelled`` built a lock and a condition that most bodies never wait on.
"""

from __future__ import annotations

import contextvars
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db.backends.postgresql.psycopg_any import BaseTzLoader

from tests.support.calls import calls_counted
from tests.testapp import jobs
from tests.worker.conftest import wait_for
from ultimat3_jobs.conf import Settings
from ultimat3_jobs.model import signature, tenancy
from ultimat3_jobs.model.context import CancelEvent, JobContext, current_job, current_tenant
from ultimat3_jobs.model.registry import Registry
from ultimat3_jobs.runtime.common.pool import _PoolLocal
from ultimat3_jobs.runtime.worker import Worker, settle
from ultimat3_jobs.runtime.worker.ahead import ClaimAhead
from ultimat3_jobs.runtime.worker.attempt import Attempt
from ultimat3_jobs.runtime.worker.handoff import HandOffs
from ultimat3_jobs.runtime.worker.holdings import Holdings
from ultimat3_jobs.types import ClaimedJob

JOBS = 300


NO_BEATS = {"heartbeat_interval": 60.0, "lease_seconds": 120.0}
"""No heartbeat during a drain: a beat hashes the ids of the attempts running when its timer
fires, as many times as a loaded host's drain is long, which is no per-job work."""


def drain_counted(
    make_worker: Callable[..., Any],
    counts: Counter[str],
    before: Callable[[Worker], None] | None = None,
    handle: Any = jobs.noop,
) -> dict[str, float]:
    """``counts`` per job over a drain of ``JOBS`` no-op jobs (of ``handle``) by 8 slots,
    heartbeats off (``NO_BEATS``); what the enqueue itself counted is left out. ``before`` is
    handed the worker before it starts."""
    handle.enqueue_many([{} for _ in range(JOBS)])
    running = make_worker(concurrency=8, start=False, ack_flush=0.02, **NO_BEATS)
    worker = running.worker
    if before is not None:
        before(worker)
    before = Counter(counts)
    running.start()
    wait_for(lambda: worker.settled_count >= JOBS, what=f"{JOBS} jobs settled")
    per_job = {what: n / JOBS for what, n in (counts - before).items()}
    running.stop()
    return per_job


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts ``uuid.UUID.__hash__``, ``uuid.UUID.hex`` and ``threading.Condition``
    constructions, any thread."""
    counts: Counter[str] = Counter()
    uuid_hash = uuid.UUID.__hash__
    uuid_hex = uuid.UUID.hex
    condition_init = threading.Condition.__init__

    def hashed(self: uuid.UUID) -> int:
        counts["uuid hash"] += 1
        return uuid_hash(self)

    def hexed(self: uuid.UUID) -> str:
        counts["uuid hex"] += 1
        return uuid_hex.__get__(self)

    def condition(self: threading.Condition, *args: object, **kwargs: object) -> None:
        counts["condition"] += 1
        condition_init(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(uuid.UUID, "__hash__", hashed)
    monkeypatch.setattr(uuid.UUID, "hex", property(hexed))
    monkeypatch.setattr(threading.Condition, "__init__", condition)
    return counts


def test_a_no_op_job_hashes_its_ids_a_few_times_and_builds_no_condition(
    make_worker, counted: Counter[str]
) -> None:
    """Before: about 20 id hashes and one condition per job; now the id is hashed where the
    worker keeps the attempt (put and popped), and where the settle answers it. Before too:
    the settle's parameters wrote the id and the claim token through ``UUID.hex``, a Python
    call each."""
    per_job = drain_counted(make_worker, counted)
    assert per_job.get("uuid hash", 0) <= 4, per_job
    assert per_job.get("uuid hex", 0) < 0.05, per_job
    assert per_job.get("condition", 0) < 0.2, per_job


def test_a_no_op_job_hashes_its_id_once(make_worker, counted: Counter[str]) -> None:
    """Before: three times, the worker's attempts keyed by the id (put, then popped); now by
    the id's ``int``, hashed in C: once, where the settle's answer is read."""
    per_job = drain_counted(make_worker, counted)
    assert per_job.get("uuid hash", 0) <= 1.2, per_job


def test_holdings_hash_no_pair_while_no_run_holds_a_slot(counted: Counter[str]) -> None:
    holdings = Holdings()
    pair = (uuid.uuid4(), uuid.uuid4())
    holdings.ended(pair)
    assert holdings.lendable(pair) is None
    assert not holdings.owns(pair)
    assert not holdings.ended_on(pair)
    assert holdings.gone(pair) is None
    assert holdings.none_held()
    assert counted["uuid hash"] == 0
    holdings.took(pair, "k")  # one held: the lookups look again
    assert not holdings.none_held()
    holdings.ended(pair)
    assert holdings.ended_on(pair)
    assert holdings.gone(pair) == "k"
    assert holdings.none_held()


def test_cancelled_is_an_event_whose_condition_comes_when_first_needed() -> None:
    ctx = JobContext(job_id=uuid.uuid4(), name="tests.noop")
    cancelled = ctx.cancelled
    assert isinstance(cancelled, threading.Event)
    assert isinstance(cancelled, CancelEvent)
    assert not cancelled.is_set()
    assert "_cond" not in vars(cancelled)  # nothing waited or set: no lock, no condition
    waited: list[bool] = []
    waiter = threading.Thread(target=lambda: waited.append(cancelled.wait(10)))
    waiter.start()
    time.sleep(0.05)
    cancelled.set()
    waiter.join(10)
    assert waited == [True]
    assert cancelled.is_set() and cancelled.wait(0)
    cancelled.clear()
    assert not cancelled.is_set() and not cancelled.wait(0.01)


def test_two_threads_first_asking_share_one_condition() -> None:
    for _ in range(200):
        event = CancelEvent()
        seen: list[threading.Condition] = []
        start = threading.Barrier(2)

        def ask(
            event: CancelEvent = event,
            seen: list[threading.Condition] = seen,
            start: threading.Barrier = start,
        ) -> None:
            start.wait()
            seen.append(event._cond)

        threads = [threading.Thread(target=ask) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert seen[0] is seen[1]


COUNTED_CALLS = {
    "lend": (HandOffs, "lend"),
    "holds": (HandOffs, "holds"),
    "reserve": (Worker, "_reserve"),
    "encode_stored": (Settings, "encode_stored"),
    "tz_load": (BaseTzLoader, "load"),
    "registry find": (Registry, "find"),
    "begin": (Attempt, "begin"),
    "context init": (JobContext, "__init__"),
    "signature compiled": (signature, "_compiled"),
    "lent_by": (settle, "lent_by"),
    "release slot": (Worker, "_release_slot"),
    "free slots": (Worker, "_free_slots"),
    "waiting count": (ClaimAhead, "__len__"),
    "take progress": (Attempt, "take_progress"),
}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts the calls of ``COUNTED_CALLS`` and of the ``TENANT_CONTEXT`` look-up, any thread."""
    counts: Counter[str] = Counter()

    def counting(what: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            counts[what] += 1
            return fn(*args, **kwargs)

        return counted

    for what, (owner, name) in COUNTED_CALLS.items():
        monkeypatch.setattr(owner, name, counting(what, getattr(owner, name)))
    monkeypatch.setattr(tenancy, "tenancy_hook", counting("tenant hook", tenancy.tenancy_hook))
    return counts


def test_a_no_op_job_skips_the_work_only_limits_results_and_hooks_need(
    make_worker, calls: Counter[str]
) -> None:
    """Before: per job, ``lend`` once and ``holds`` about twice with no limited job anywhere,
    ``_reserve`` about three times (an empty second pass of ``_start_waiting`` after each
    start), the ``None`` result encoded, the ``TENANT_CONTEXT`` setting looked up, and two
    timestamps decoded from the claim's row that the worker never reads; and the settle
    asking each attempt for a progress none of them left."""
    per_job = drain_counted(make_worker, calls)
    skipped = ("lend", "holds", "encode_stored", "tz_load", "tenant hook", "take progress")
    assert all(per_job.get(what, 0) < 0.05 for what in skipped), per_job
    assert per_job.get("reserve", 0) <= 1.5, per_job


def test_a_no_op_job_pays_once_per_claim_or_definition_what_it_can(
    make_worker, calls: Counter[str]
) -> None:
    """Before: per job, the registry looked up by name (now once per name of a claim), the
    attempt's lock taken twice as its body starts (``begin_body``, then ``begin``: now one
    round), its context built through the dataclass's keyword ``__init__`` (now slot by slot),
    the body's signature shape looked up by the signature's id (now the definition's), and
    the settle asking which slot a run that rode none was lent."""
    per_job = drain_counted(make_worker, calls)
    assert per_job.get("registry find", 0) < 0.3, per_job
    assert per_job.get("begin", 0) < 0.05, per_job
    assert per_job.get("context init", 0) < 0.05, per_job
    assert per_job.get("signature compiled", 0) < 0.05, per_job
    assert per_job.get("lent_by", 0) < 0.05, per_job


def test_a_claimed_jobs_context_is_the_one_the_dataclass_builds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Built slot by slot (no keyword ``__init__``), a claimed job's context has every field
    the dataclass's ``__init__`` would give it."""
    ids = {"id": uuid.uuid4(), "claim_token": uuid.uuid4()}
    run = {"attempt": 2, "max_attempts": 5, "priority": 3, "traceparent": "00-abc-def-01"}
    job = ClaimedJob(name="tests.noop", queue="math", input={}, tenant_id="row", **ids, **run)
    inits: list[object] = []
    init = JobContext.__init__
    monkeypatch.setattr(JobContext, "__init__", lambda *a, **k: inits.append(k) or init(*a, **k))
    built = JobContext.for_claimed(job, tenant_id="acme")
    assert inits == []
    expected = JobContext(
        job_id=job.id,
        name=job.name,
        attempt=2,
        max_attempts=5,
        queue="math",
        tenant_id="acme",
        traceparent="00-abc-def-01",
    )
    names = [name for name in JobContext.__slots__ if name != "__weakref__"]
    assert names and all(hasattr(built, name) for name in names)
    assert type(built.cancelled) is CancelEvent and not built.cancelled.is_set()
    assert built.cancelled is not JobContext.for_claimed(job, tenant_id=None).cancelled
    expected.cancelled = built.cancelled  # an event equals only itself
    assert [getattr(built, n) for n in names] == [getattr(expected, n) for n in names]
    assert built == expected and repr(built) == repr(expected)


def test_a_no_op_job_counts_the_loops_slots_once_per_question(
    make_worker, calls: Counter[str]
) -> None:
    """Before: per job, the slot released twice (the settle's call finding it freed by the
    body's thread already), the free slots counted twice per nudge, and the waiting count
    asked through ``len(self)`` in both ``behind`` and ``wanted``."""
    per_job = drain_counted(make_worker, calls)
    assert per_job.get("release slot", 0) <= 1.05, per_job
    assert per_job.get("free slots", 0) <= 0.5, per_job
    assert per_job.get("waiting count", 0) <= 1.5, per_job


@pytest.fixture
def variables_set() -> Iterator[Counter[str]]:
    """Counts, on every thread, the ``ContextVar.set`` calls made from Python code."""

    def name_of(callable_: object) -> str | None:
        owner = getattr(callable_, "__self__", None)
        is_set = type(owner) is contextvars.ContextVar and callable_.__name__ == "set"  # type: ignore[attr-defined]
        return "ContextVar.set" if is_set else None

    with calls_counted("per-job variables", name_of=name_of) as counts:
        yield counts


def test_a_no_op_jobs_scope_sets_one_context_variable(
    make_worker, variables_set: Counter[str]
) -> None:
    """Before: two per job (the tenant's and the job's variables, each set and reset around
    the body, each a new context mapping); now one variable holds both."""
    per_job = drain_counted(make_worker, variables_set)
    assert 0.9 <= per_job.get("ContextVar.set", 0) <= 1.1, per_job


def test_a_scope_inside_a_body_keeps_its_job_and_gives_its_tenant_back() -> None:
    """The body's scope sets one context variable (before: two, the tenant's and the job's);
    a scope entered inside it keeps the job, and gives the tenant back as it ends."""
    ctx = JobContext.for_direct_call("tests.noop", tenant_id="acme")
    assert (current_tenant(), current_job()) == (None, None)
    with tenancy.TenantScope("acme", job=ctx):
        ours = [v for v in contextvars.copy_context() if v.name.startswith("ultimat3_jobs")]
        assert len(ours) == 1, ours
        assert (current_tenant(), current_job()) == ("acme", ctx)
        with tenancy.tenant_scope("globex"):
            assert (current_tenant(), current_job()) == ("globex", ctx)
        assert (current_tenant(), current_job()) == ("acme", ctx)
    assert (current_tenant(), current_job()) == (None, None)


@pytest.fixture
def set_through_object() -> Iterator[Counter[str]]:
    """Counts, on every thread, the calls of ``object.__setattr__`` made from Python code."""
    with calls_counted("per-job counts") as counts:
        yield counts


def test_a_no_op_job_sets_no_field_through_object_setattr(
    make_worker, set_through_object: Counter[str]
) -> None:
    """Before: about 25 per job, the fields of the three frozen records built per job (the
    claimed job, its outcome, its settle item), each set by the dataclass's ``__init__``
    through ``object.__setattr__``; ``quick_init`` sets each slot through its descriptor."""
    per_job = drain_counted(make_worker, set_through_object)
    assert per_job.get("object.__setattr__", 0) < 1, per_job


class CountingLock:
    """A lock that counts its acquisitions in ``counts[name]``."""

    def __init__(self, counts: Counter[str], name: str) -> None:
        self._lock = threading.Lock()
        self._counts = counts
        self._name = name

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        self._counts[self._name] += 1
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def test_a_no_op_job_takes_neither_the_held_threads_nor_the_gates_lock(make_worker) -> None:
    """Before: per job, the held threads' lock as its body returned (the body's thread wins
    the settle first now: nothing can abandon it after that) and, per start, the lease gate's
    lock to move counts that no run of an unlimited job moves."""
    counts: Counter[str] = Counter()

    def counting(worker: Worker) -> None:
        worker.held._lock = CountingLock(counts, "held lock")  # type: ignore[assignment]
        worker._limits.gate._lock = CountingLock(counts, "gate lock")  # type: ignore[assignment]

    per_job = drain_counted(make_worker, counts, before=counting)
    assert per_job.get("held lock", 0) < 0.05, per_job
    assert per_job.get("gate lock", 0) < 0.05, per_job


def test_a_no_op_job_reaches_the_body_pools_thread_local_about_once(make_worker) -> None:
    """Before: about seven reads and writes of the pool's ``threading.local`` per job (each a
    look-up of the thread's own dictionary): whether the thread runs a callback, the callable
    it runs next, set and cleared per task. Now a pool thread keeps its state in one object,
    which ``call`` reaches through the thread-local once."""
    counts: Counter[str] = Counter()

    class CountingLocal(_PoolLocal):
        def __getattribute__(self, name: str) -> Any:
            counts["thread-local"] += 1
            try:
                return super().__getattribute__(name)
            except AttributeError:
                counts["thread-local missed"] += 1
                raise

        def __setattr__(self, name: str, value: Any) -> None:
            counts["thread-local"] += 1
            super().__setattr__(name, value)

    def counting(worker: Worker) -> None:
        worker._bodies.pool._local = CountingLocal()

    per_job = drain_counted(make_worker, counts, before=counting)
    assert 0.5 <= per_job.get("thread-local", 0) <= 1.5, per_job
    # Before: a miss (an ``AttributeError``) per start from the claim loop's thread.
    assert per_job.get("thread-local missed", 0) < 0.05, per_job
