"""The memory driver's share of the transaction rule.

An enqueue made while ``transaction.atomic()`` blocks are open in the calling thread, on any
alias, is held until every one of them has committed (one ``transaction.on_commit`` callback per
alias), and dropped when one of them (or the savepoint it was made in) rolls back. Tests that run
on the memory driver so see what PostgreSQL would show: the job appears at the commit and never
after a rollback.

The answer is decided at once, as PostgreSQL would decide it inside the transaction: ``deduped``
with the holder's id when a live job has the same id, or when a live job or a job held earlier in
this thread's open transactions has the same name and idempotency key; ``created`` otherwise. A
job held as ``created`` whose key a committed job took meanwhile is deduplicated at the commit.

Layer: a concrete driver (imports L1, L2 and ``django.db``).
"""

from __future__ import annotations

import functools
import threading
import uuid
from collections.abc import Sequence
from typing import Protocol

from django.db import connections, transaction

from ultimat3_jobs.drivers.base import writes_now
from ultimat3_jobs.types import EnqueueRequest, EnqueueResult


class _Store(Protocol):
    def _live_holder(self, request: EnqueueRequest) -> uuid.UUID | None: ...

    def job_enqueue_many(self, *, requests: Sequence[EnqueueRequest]) -> list[EnqueueResult]: ...


_local = threading.local()


def open_transactions() -> list[str]:
    """The aliases with a ``transaction.atomic()`` block open in this thread, but for the
    blocks a Django ``TestCase`` wraps each test in (they stand for autocommit)."""
    return [
        c.alias
        for c in connections.all(initialized_only=True)
        if c.in_atomic_block
        and not all(getattr(block, "_from_testcase", False) for block in c.atomic_blocks)
    ]


class _Held:
    """Requests waiting for the commit of every transaction in ``aliases``."""

    def __init__(self, store: _Store, requests: list[EnqueueRequest], aliases: list[str]) -> None:
        self.store = store
        self.requests = requests
        self.waiting: dict[str, functools.partial[None]] = {}
        for alias in aliases:
            self.waiting[alias] = functools.partial(self._committed, alias)
            transaction.on_commit(self.waiting[alias], using=alias)

    def _committed(self, alias: str) -> None:
        self.waiting.pop(alias, None)
        if not self.waiting:
            held = _held()
            if self in held:
                held.remove(self)
            self.store.job_enqueue_many(requests=self.requests)

    def alive(self, registered: dict[str, set[int]]) -> bool:
        """False once a rollback dropped one of its callbacks (``registered``: the ids of the
        callbacks each alias still holds)."""
        return all(id(callback) in registered[alias] for alias, callback in self.waiting.items())


def _held() -> list[_Held]:
    held: list[_Held] | None = getattr(_local, "held", None)
    if held is None:
        held = _local.held = []
    return held


def _held_holder(
    store: _Store, request: EnqueueRequest, created: list[EnqueueRequest]
) -> uuid.UUID | None:
    """The id of a job with the same name and idempotency key held earlier, in this batch or in
    this thread's open transactions (a rolled-back one no longer counts)."""
    if request.idempotency_key is None:
        return None
    wanted = (request.name, request.idempotency_key)
    for earlier in created:
        if (earlier.name, earlier.idempotency_key) == wanted:
            return earlier.id
    held = _held()
    aliases = {alias for entry in held for alias in entry.waiting}
    registered = {
        alias: {id(callback) for _, callback, *_ in connections[alias].run_on_commit}
        for alias in aliases
    }
    held[:] = [entry for entry in held if entry.alive(registered)]
    for entry in held:
        if entry.store is store:
            for earlier in entry.requests:
                if (earlier.name, earlier.idempotency_key) == wanted:
                    return earlier.id
    return None


def hold_until_commit(
    store: _Store, requests: Sequence[EnqueueRequest]
) -> list[EnqueueResult] | None:
    """Hold ``requests`` until the caller's open transactions commit and answer for them, or
    answer None when none is open (or the caller asked to publish now): write them at once."""
    if writes_now():
        return None
    aliases = open_transactions()
    if not aliases:
        return None
    results: list[EnqueueResult] = []
    created: list[EnqueueRequest] = []
    for request in requests:
        holder = store._live_holder(request) or _held_holder(store, request, created)
        if holder is not None:
            results.append(EnqueueResult(holder, "deduped"))
        else:
            results.append(EnqueueResult(request.id, "created"))
            created.append(request)
    if created:
        _held().append(_Held(store, created, aliases))
    return results
