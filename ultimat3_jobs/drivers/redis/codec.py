"""What crosses between the Redis driver and its scripts: arguments as text, times as integer
microseconds of Redis's clock, job hashes read back into the seam's types.

Values are checked here before any write, as PostgreSQL's column types and constraints check
them: the JSON texts (by the drivers' jsonb rules, ``drivers/jsonb.py``, one place for them),
the priority range and ``max_attempts``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from ultimat3_jobs.drivers.jsonb import check_jsonb_text, jsonb_entry, jsonb_text
from ultimat3_jobs.drivers.steps_seam import StepRecord
from ultimat3_jobs.errors import StoreRefused
from ultimat3_jobs.serialization import decode_json
from ultimat3_jobs.types import (
    PRIORITY_MAX,
    PRIORITY_MIN,
    ClaimedJob,
    EnqueueRequest,
    EnqueueResult,
    JobRecord,
    JobState,
    JobSummary,
    WorkerRecord,
)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def text(value: bytes | str | None) -> str | None:
    if value is None:
        return None
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


_NEW = object.__new__
_SET = object.__setattr__
_CANONICAL = 36
"""The length of a UUID's text as ``str(uuid)`` writes it, the only spelling the store holds."""


def uuid_of(value: bytes | str) -> uuid.UUID:
    """A UUID from its text as the store holds it (``str(uuid)``: 36 characters), made from its
    32 hex digits as ``uuid.UUID.__init__`` would, without its parse of every spelling it
    accepts (a claim reads two per job); any other text goes through that parse."""
    if len(value) != _CANONICAL:
        return uuid.UUID(text(value))
    digits = value.replace(b"-", b"") if isinstance(value, bytes) else value.replace("-", "")
    if len(digits) != 32:
        return uuid.UUID(text(value))
    made = _NEW(uuid.UUID)
    _SET(made, "int", int(digits, 16))
    _SET(made, "is_safe", uuid.SafeUUID.unknown)
    return made


def micros(moment: datetime) -> int:
    """A datetime as integer microseconds since the epoch (a naive one read as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - EPOCH) // timedelta(microseconds=1)


def moment(value: bytes | str | int | float | None) -> datetime | None:
    """Microseconds since the epoch (as Redis answers them) as an aware UTC datetime."""
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode()
    return EPOCH + timedelta(microseconds=int(float(value)))


def optional(value: str | int | float | None) -> str:
    """An optional argument as the scripts' ``opt`` reads it: '' for null, else '=' + text."""
    return "" if value is None else f"={value}"


def error_entry(entry: Mapping[str, Any]) -> str:
    """An error entry as JSON text, refused (``StoreRefused``) where jsonb would refuse it."""
    return json.dumps(jsonb_entry(dict(entry)), separators=(",", ":"))


def check_request(request: EnqueueRequest) -> None:
    """Refuse what ``x_jobs`` would refuse, before anything is written."""
    check_jsonb_text(request.input_json, "input")
    if not PRIORITY_MIN <= request.priority <= PRIORITY_MAX:
        raise StoreRefused(
            reason=f"x_jobs_priority_range: priority {request.priority} is outside "
            f"{PRIORITY_MIN}..{PRIORITY_MAX}"
        )
    if request.max_attempts < 1:
        raise StoreRefused(
            reason=f"x_jobs_attempts_valid: max_attempts {request.max_attempts} is below 1"
        )


def enqueue_args(request: EnqueueRequest) -> list[str]:
    """The 13 fields the scripts' ``enqueue_one`` reads, in its order."""
    return [
        str(request.id),
        request.name,
        request.queue,
        str(int(request.priority)),
        optional(None if request.run_at is None else micros(request.run_at)),
        optional(None if request.delay_seconds is None else repr(float(request.delay_seconds))),
        request.input_json,
        optional(request.idempotency_key),
        optional(request.tenant_id),
        optional(request.enqueued_by),
        str(int(request.max_attempts)),
        optional(None if request.lease_seconds is None else int(request.lease_seconds)),
        optional(request.traceparent),
    ]


def enqueue_result(status: bytes | str, job_id: bytes | str) -> EnqueueResult:
    told = text(status)
    assert told in ("created", "deduped"), told
    return EnqueueResult(uuid_of(job_id), told)


def pairs(flat: Sequence[Any]) -> dict[str, str]:
    """A hash answered as field, value pairs, decoded."""
    items = [text(item) for item in flat]
    return {str(items[i]): str(items[i + 1]) for i in range(0, len(items), 2)}


def _int(row: Mapping[str, str], field: str) -> int | None:
    value = row.get(field)
    return None if value is None else int(value)


def job_record(job_id: uuid.UUID, row: Mapping[str, str]) -> JobRecord:
    """A job's hash as a ``JobRecord``; its ``lease_expires_at`` only while it runs (an ack
    leaves the field behind rather than spend a command per job on it)."""
    state = JobState(row["state"])
    return JobRecord(
        id=job_id,
        name=row["name"],
        queue=row["queue"],
        state=state,
        priority=int(row["priority"]),
        run_at=moment(row["run_at"]),  # type: ignore[arg-type]
        input=decode_json(row["input"]),
        idempotency_key=row.get("key"),
        tenant_id=row.get("tenant"),
        enqueued_by=row.get("enqueued_by"),
        attempt=int(row["attempt"]),
        max_attempts=int(row["max_attempts"]),
        worker_id=row.get("worker_id"),
        lease_expires_at=moment(row.get("lease_expires_at")) if state is JobState.RUNNING else None,
        progress=decode_json(row.get("progress")),
        result=decode_json(row.get("result")),
        errors=json.loads(row.get("errors") or "[]"),
        created_at=moment(row["created_at"]),  # type: ignore[arg-type]
        started_at=moment(row.get("started_at")),
        finished_at=moment(row.get("finished_at")),
    )


def job_summary(row: Mapping[str, str]) -> JobSummary:
    errors = json.loads(row.get("errors") or "[]")
    last = errors[-1] if errors else {}
    return JobSummary(
        id=uuid.UUID(row["id"]),
        name=row["name"],
        queue=row["queue"],
        state=JobState(row["state"]),
        priority=int(row["priority"]),
        run_at=moment(row["run_at"]),  # type: ignore[arg-type]
        idempotency_key=row.get("key"),
        tenant_id=row.get("tenant"),
        attempt=int(row["attempt"]),
        max_attempts=int(row["max_attempts"]),
        worker_id=row.get("worker_id"),
        error_count=len(errors),
        last_error_class=jsonb_text(last.get("error_class")),
        last_error_message=jsonb_text(last.get("message")),
        created_at=moment(row["created_at"]),  # type: ignore[arg-type]
        started_at=moment(row.get("started_at")),
        finished_at=moment(row.get("finished_at")),
    )


_FRESH_INPUTS = {b"{}": dict, "{}": dict, b"[]": list, "[]": list, b"null": lambda: None}
"""The usual inputs of a no-argument job, made fresh for each (a body may change its own)
without a JSON parse."""


CLAIMED_FIELDS = (
    "id", "name", "queue", "input", "attempt", "max_attempts", "claim_token", "priority",
    "tenant_id", "traceparent",
)  # fmt: skip
"""``ClaimedJob``'s fields, in the order of a claim's answer row (a test holds them to the
class's own)."""
_CLAIMED_SLOTS = tuple(getattr(ClaimedJob, name).__set__ for name in CLAIMED_FIELDS)


def _claimed(*values: Any) -> ClaimedJob:
    """A ``ClaimedJob`` of ``values`` (in ``CLAIMED_FIELDS`` order) with its slots set as its
    frozen ``__init__`` sets them, at about a quarter of that ``__init__``'s cost (ten
    keywords, each set through ``object.__setattr__``); one is built per claimed job."""
    job = _NEW(ClaimedJob)
    for put, value in zip(_CLAIMED_SLOTS, values, strict=True):
        put(job, value)
    return job


def claimed_jobs(answer: Sequence[Sequence[Any]]) -> list[ClaimedJob]:
    """The jobs a claim answered, each row a ``ClaimedJob``'s fields (``CLAIMED_FIELDS``).
    The jobs of one claim mostly share their name, queue and tenant: each distinct value is
    decoded once."""
    texts: dict[Any, str | None] = {None: None}
    claimed = []
    for (job_id, name, queue, input_json, attempt, max_attempts, token, priority, tenant,
         traceparent) in answer:  # fmt: skip
        for raw in (name, queue, tenant, traceparent):
            if raw not in texts:
                texts[raw] = text(raw)
        fresh = _FRESH_INPUTS.get(input_json)
        claimed.append(
            _claimed(
                uuid_of(job_id),
                texts[name],
                texts[queue],
                fresh() if fresh else decode_json(text(input_json)),
                int(attempt),
                int(max_attempts),
                uuid_of(token),
                int(priority),
                texts[tenant],
                texts[traceparent],
            )
        )
    return claimed


def handed_job(message: bytes | str) -> ClaimedJob:
    """The job a hand's message carries (``hand_to`` in ``lua/_lib.lua``): a claim's row in
    JSON, a missing field ``false``."""
    row = [None if value is False else value for value in json.loads(message)]
    return claimed_jobs([row])[0]


def worker_record(answer: Sequence[Any]) -> WorkerRecord:
    worker_id, host, pid, queues, slots, demand, started, beat, expires, limits = (
        text(value) for value in answer
    )
    return WorkerRecord(
        id=str(worker_id),
        host=str(host),
        pid=int(str(pid)),
        queues=json.loads(str(queues)),
        slots=int(str(slots)),
        demand=json.loads(str(demand)),
        started_at=moment(started),  # type: ignore[arg-type]
        heartbeat_at=moment(beat),  # type: ignore[arg-type]
        expires_at=moment(expires),  # type: ignore[arg-type]
        limits=json.loads(str(limits)),
    )


def ids(answer: Sequence[Any]) -> Iterator[uuid.UUID]:
    for value in answer:
        yield uuid_of(value)


def step_record(text: bytes | str | None) -> StepRecord | None:
    """A step as a script answers it (its JSON object; ``None`` stays ``None``)."""
    if text is None:
        return None
    row = json.loads(text)
    return StepRecord(
        name=row["name"],
        seq=int(row["seq"]),
        kind=row["kind"],
        status=row["status"],
        output=decode_json(row.get("output")),
        error=decode_json(row.get("error")),
        event=row.get("event"),
        key=row.get("key"),
        wait_since=moment(row.get("wait_since")),
        wait_until=moment(row.get("wait_until")),
        updated_at=moment(row.get("updated_at")),
    )
