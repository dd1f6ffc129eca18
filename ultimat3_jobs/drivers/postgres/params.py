"""The parameters of the statements that write jobs, shared by the driver, the scheduler's fire
and the outbox."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime
from operator import attrgetter
from typing import Any

from ultimat3_jobs.batches import RequestBatch, SharedColumns
from ultimat3_jobs.drivers.base import ENQUEUE_CHUNK, check_settle_action
from ultimat3_jobs.types import AckItem, EnqueueRequest, SettleItem

WAKE_CHANNEL = "ultimat3_jobs"

CLAIM_CHUNK = 1_000
"""The most jobs one ``job_claim`` statement takes: each queue's rows are limited by this
number, written in the statement, so the planner's estimates, and the plan's cost, stop growing
with the backlog (see job_claim in jobs.sql). A claim of more runs one statement per chunk."""


_REQUEST_COLUMNS: tuple[tuple[str, str], ...] = (
    ("id", "ids"),
    ("name", "names"),
    ("queue", "queues"),
    ("priority", "priorities"),
    ("run_at", "run_ats"),
    ("delay_seconds", "delays"),
    ("input_json", "inputs"),
    ("idempotency_key", "keys"),
    ("tenant_id", "tenants"),
    ("enqueued_by", "enqueued_bys"),
    ("max_attempts", "max_attempts"),
    ("lease_seconds", "lease_seconds"),
    ("traceparent", "traceparents"),
)
"""Each field of an :class:`EnqueueRequest` a job row is written from, and its array parameter
for a batch."""

_REQUEST_PARAMS = tuple(
    (field, "input" if field == "input_json" else field) for field, _ in _REQUEST_COLUMNS
)
"""Each of those fields and its parameter for one request: named as the field, but ``input``
(the column) for ``input_json``."""


def enqueue_params(request: EnqueueRequest) -> dict[str, Any]:
    """One request as the named parameters of ``job_enqueue`` (and ``scheduler_fire``)."""
    return {one: getattr(request, field) for field, one in _REQUEST_PARAMS}


def batch_params(chunk: Sequence[EnqueueRequest]) -> dict[str, Any]:
    """A batch of requests as one array parameter per column (``unnest`` in the statement),
    each already written as PostgreSQL's array text (:func:`array_text`): psycopg would walk
    every element of 13 lists in Python to the same end, the larger part of a batch's cost on
    the client."""
    params = {
        many: array_text([getattr(r, field) for r in chunk])
        for field, many in _REQUEST_COLUMNS
        if field != "id"
    }
    params["ids"] = uuid_array_text([r.id for r in chunk])
    return params


SHARED_COLUMNS = (
    "name",
    "queue",
    "priority",
    "run_at",
    "delay_seconds",
    "idempotency_key",
    "enqueued_by",
    "max_attempts",
    "lease_seconds",
    "traceparent",
)
"""The columns every job of one ``enqueue_many`` call shares (``job_enqueue_shared``)."""


def shared_batch_params(chunk: Sequence[EnqueueRequest]) -> dict[str, Any] | None:
    """``job_enqueue_shared``'s parameters when the requests differ only in id, input and tenant
    (the jobs of one ``enqueue_many`` call always do), else ``None``: the batch then takes
    ``job_enqueue_many`` (:func:`batch_params`)."""
    params: dict[str, Any] = {}
    if isinstance(chunk, RequestBatch):  # its columns as they are: no object per job
        params.update((column, getattr(chunk.shared, column)) for column in SHARED_COLUMNS)
        ids, inputs, tenants = chunk.ids, chunk.inputs, chunk.tenants
    else:
        for column in SHARED_COLUMNS:
            values = set(map(attrgetter(column), chunk))
            if len(values) != 1:  # equal values store alike
                return None
            (params[column],) = values
        ids = [r.id for r in chunk]
        inputs = [r.input_json for r in chunk]
        tenants = [r.tenant_id for r in chunk]
    params["ids"] = uuid_array_text(ids)
    params["inputs"] = array_text(list(inputs))
    params["tenants"] = array_text(list(tenants))
    return params


def batch_statement(chunk: Sequence[EnqueueRequest]) -> tuple[str, dict[str, Any]]:
    """The statement writing one chunk, and its parameters: ``job_enqueue_minted`` for one
    ``enqueue_many`` call's jobs with no idempotency key (their ids were minted for the call, so
    nothing can conflict), ``job_enqueue_shared`` for other jobs that differ only in id, input
    and tenant, ``job_enqueue_many`` for the rest (the relay's mixed batches)."""
    shared = shared_batch_params(chunk)
    if shared is None:
        return "job_enqueue_many", batch_params(chunk)
    if isinstance(chunk, RequestBatch) and chunk.minted and chunk.shared.idempotency_key is None:
        shared["size"] = len(chunk)
        return "job_enqueue_minted", shared
    return "job_enqueue_shared", shared


def copyable(requests: Sequence[EnqueueRequest]) -> RequestBatch | None:
    """``requests`` when ``job_enqueue_copy`` may write them: one ``enqueue_many`` call's jobs
    (minted ids, no idempotency key) due now, more than one chunk of them."""
    if (
        isinstance(requests, RequestBatch)
        and len(requests) > ENQUEUE_CHUNK
        and requests.minted
        and requests.shared.idempotency_key is None
        and due_now(requests.shared)
    ):
        return requests
    return None


def copy_rows(batch: RequestBatch, paused: bool) -> Iterator[str]:
    """The lines ``job_enqueue_copy`` reads (COPY's text format, its columns' order), one
    chunk's at a time so that the next is built while the server reads this one. The columns
    every job shares are written once; per job, only the id's hex digits, the input (whose
    JSON text can hold no tab or line break, so only a backslash is escaped) and the tenant."""
    shared = batch.shared
    tail = "\t".join(
        map(
            _copy_field,
            (
                shared.name,
                shared.queue,
                shared.priority,
                shared.enqueued_by,
                shared.max_attempts,
                shared.lease_seconds,
                shared.traceparent,
                "t" if paused else "f",
            ),
        )
    )
    tenant_text = {tenant: _copy_field(tenant) for tenant in set(batch.tenants)}
    for start in range(0, len(batch), ENQUEUE_CHUNK):
        end = start + ENQUEUE_CHUNK
        yield "".join(
            [
                f"{job_id.int:032x}\t"
                f"{text if _BACKSLASH not in text else text.replace(_BACKSLASH, _ESCAPED)}\t"
                f"{tenant_text[tenant]}\t{tail}\n"
                for job_id, text, tenant in zip(
                    batch.ids[start:end],
                    batch.inputs[start:end],
                    batch.tenants[start:end],
                    strict=True,
                )
            ]
        )


_BACKSLASH, _ESCAPED = "\\", "\\\\"


def _copy_field(value: str | int | None) -> str:
    """One column of a COPY text line: ``\\N``, a number, or text with its backslashes, tabs
    and line breaks escaped (COPY's text format)."""
    if value is None:
        return "\\N"
    if type(value) is not str:
        return str(int(value))
    return (
        value.replace(_BACKSLASH, _ESCAPED)
        .replace("\t", "\\t")
        .replace("\n", "\\n")
        .replace("\r", "\\r")
    )


def request_ids(chunk: Sequence[EnqueueRequest]) -> Sequence[uuid.UUID]:
    """The ids of a batch's requests, in order."""
    return chunk.ids if isinstance(chunk, RequestBatch) else [r.id for r in chunk]


def due_queues(chunk: Sequence[EnqueueRequest]) -> list[str]:
    """The queues of a batch's jobs that are due at once (a wake is worth sending for them),
    each once, in the batch's order."""
    if isinstance(chunk, RequestBatch):
        return [chunk.shared.queue] if due_now(chunk.shared) else []
    return list(dict.fromkeys(r.queue for r in chunk if due_now(r)))


def array_text(values: list[str | int | float | datetime | None]) -> str:
    """``values`` as the text of a one-dimensional PostgreSQL array (``{a,"b c",NULL}``), for a
    parameter the statement casts (``%(names)s::text[]``). A column whose values are all one
    value (most of a batch's: one job name, one queue) is written once and repeated."""
    distinct = set(values)
    if len(distinct) == 1:  # equal values store alike
        (only,) = distinct
        return "{" + ",".join([_element(only)] * len(values)) + "}"
    return "{" + ",".join(map(_element, values)) + "}"


def uuid_array_text(ids: Sequence[uuid.UUID]) -> str:
    """UUIDs as the text of a ``uuid[]`` parameter (their hex digits need no quoting), as
    ``UUID.hex`` writes them, without a property's Python call per id (two ids per job); written
    through ``bytes.hex``, not ``format(..., "032x")``, whose format-spec parsing cost about 1,500
    interpreter instructions per id (callgrind), ``bytes.hex`` about 20."""
    return "{" + ",".join([job_id.int.to_bytes(16).hex() for job_id in ids]) + "}"


def _element(value: str | int | float | datetime | None) -> str:
    """One array element: ``NULL``, a number, or text double-quoted with its backslashes and
    double quotes escaped (the array syntax's only escapes inside quotes)."""
    if value is None:
        return "NULL"
    if type(value) is str:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, datetime):
        return '"' + value.isoformat() + '"'
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"no array element for {type(value).__name__} {value!r:.80}")
    return repr(value) if isinstance(value, float) else str(int(value))


def due_now(request: EnqueueRequest | SharedColumns) -> bool:
    return request.run_at is None and not request.delay_seconds


def settle_params(items: Sequence[SettleItem]) -> dict[str, str]:
    """A batch of endings as one array parameter per column of ``job_settle_many``, each
    written as array text (:func:`array_text`), as a batch's enqueue is."""
    for item in items:
        check_settle_action(item.action)
    return {
        **ack_params(items),
        "actions": array_text([i.action for i in items]),
        "progress": array_text([None if i.action == "drop" else i.progress_json for i in items]),
        "errors": array_text(
            [
                None
                if i.error is None or i.action in ("complete", "drop")
                else json.dumps(i.error.as_json())
                for i in items
            ]
        ),
        "delays": array_text([max(0.0, float(i.delay_seconds)) for i in items]),
        "counts": "{" + ",".join(["t" if i.counts_as_attempt else "f" for i in items]) + "}",
    }


def ack_params(items: Sequence[AckItem] | Sequence[SettleItem]) -> dict[str, str]:
    """Completed attempts as the array parameters of ``job_ack_many``, written as array text
    (:func:`array_text`): psycopg's dumping of four lists, element by element in Python, was
    the larger part of a flush's cost on the settler's thread."""
    return {
        "ids": uuid_array_text([item.job_id for item in items]),
        "tokens": uuid_array_text([item.claim_token for item in items]),
        "results": array_text([item.result_json for item in items]),
        "progress": array_text([item.progress_json for item in items]),
        "relayed": "{"
        + ",".join(["t" if getattr(i, "relayed", False) else "f" for i in items])
        + "}",
        "lent_by": "{"
        + ",".join([lent.hex if (lent := getattr(i, "lent_by", None)) else "NULL" for i in items])
        + "}",
    }
