"""The jobs of one ``enqueue_many`` call, held as columns: a sequence of requests that builds
each :class:`~ultimat3_jobs.types.EnqueueRequest` only when one is asked for.

Layer L1 (core). Every job of one call shares its definition's and its options' columns
(:class:`SharedColumns`); only the id, the input and the tenant differ. A driver that writes
columns (PostgreSQL's ``job_enqueue_shared``) reads them as they are, with no object per job;
any other code sees an ordinary sequence of requests.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import overload

from ultimat3_jobs.carry import carried
from ultimat3_jobs.types import EnqueueRequest, OnConflict


@dataclass(frozen=True, slots=True, kw_only=True)
class SharedColumns:
    """What every request of a :class:`RequestBatch` has alike: fields of ``EnqueueRequest``,
    named as there, that each request takes as they are."""

    name: str
    queue: str
    priority: int
    run_at: datetime | None
    delay_seconds: float | None
    idempotency_key: str | None
    on_conflict: OnConflict
    max_attempts: int
    lease_seconds: int | None
    enqueued_by: str | None
    traceparent: str | None


class RequestBatch(Sequence[EnqueueRequest]):
    """Requests that differ only in id, input JSON and tenant, one list of each. The requests
    are built on the first iteration and kept, so a reader that walks the batch more than
    once (the memory and Redis drivers, the outbox) builds each once, as from a list."""

    __slots__ = ("_built", "_columns", "ids", "inputs", "minted", "shared", "tenants")

    def __init__(
        self,
        shared: SharedColumns,
        ids: Sequence[uuid.UUID],
        inputs: Sequence[str],
        tenants: Sequence[str | None],
        *,
        built: list[EnqueueRequest] | None = None,
        minted: bool = False,
    ) -> None:
        if not len(ids) == len(inputs) == len(tenants):
            raise ValueError("a request batch needs one id, one input and one tenant per job")
        self.shared = shared
        self.ids = ids
        self.inputs = inputs
        self.tenants = tenants
        self._built = built
        self.minted = minted
        """The ids were minted for this batch (``new_job_ids``) and it is written once, so no
        row holds one of them: a driver may insert it with no conflict on the id to look for."""
        self._columns = carried(shared, EnqueueRequest)

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, index: int) -> EnqueueRequest: ...

    @overload
    def __getitem__(self, index: slice) -> RequestBatch: ...

    def __getitem__(self, index: int | slice) -> EnqueueRequest | RequestBatch:
        built = self._built
        if isinstance(index, slice):
            return RequestBatch(
                self.shared,
                self.ids[index],
                self.inputs[index],
                self.tenants[index],
                built=None if built is None else built[index],
                minted=self.minted,
            )
        if built is not None:
            return built[index]
        return self._request(self.ids[index], self.inputs[index], self.tenants[index])

    def __iter__(self) -> Iterator[EnqueueRequest]:
        if self._built is None:
            self._built = list(map(self._request, self.ids, self.inputs, self.tenants))
        return iter(self._built)

    def _request(self, job_id: uuid.UUID, input_json: str, tenant: str | None) -> EnqueueRequest:
        return EnqueueRequest(id=job_id, input_json=input_json, tenant_id=tenant, **self._columns)
