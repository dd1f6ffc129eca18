"""Rows of the job statements (``sql/jobs.sql``, ``job_list`` and ``job_get``) by column name."""

from __future__ import annotations

import uuid
from operator import itemgetter
from typing import Any

from ultimat3_jobs.drivers.postgres.rows.result import Result, as_uuid, records
from ultimat3_jobs.frozen import quick_new
from ultimat3_jobs.serialization import decode_json
from ultimat3_jobs.types import (
    ClaimedJob,
    ExpiredAttempt,
    JobRecord,
    JobState,
    JobSummary,
    RescuedJob,
)

CLAIMED = (
    "id",
    "name",
    "queue",
    "input",
    "attempt",
    "max_attempts",
    "claim_token",
    "priority",
    "tenant_id",
    "traceparent",
)

_new_claimed = quick_new(ClaimedJob)  # built once per job: no class call (``frozen.py``)


def claimed_jobs(result: Result) -> list[ClaimedJob]:
    """``job_claim``'s rows in claim order: highest priority first, then earliest due (two
    stable sorts on C keys, no Python call per row; psycopg loads the ids as UUIDs)."""
    new = _new_claimed
    pick = result.picker(*CLAIMED)
    priority, run_at = result.positions("priority", "run_at")
    rows = sorted(result.rows, key=itemgetter(run_at))
    rows.sort(key=itemgetter(priority), reverse=True)  # equal priorities keep run_at's order
    return [
        new(
            id=id_,
            name=name,
            queue=queue,
            input=decode_json(input_),
            attempt=attempt,
            max_attempts=max_attempts,
            claim_token=token,
            priority=priority,
            tenant_id=tenant_id,
            traceparent=traceparent,
        )
        for (
            id_,
            name,
            queue,
            input_,
            attempt,
            max_attempts,
            token,
            priority,
            tenant_id,
            traceparent,
        ) in map(pick, rows)
    ]


def job_record(result: Result) -> JobRecord | None:
    """``job_get``'s row (its columns named as :class:`JobRecord`'s fields), or ``None`` when
    no job has the id."""
    found = records(
        result,
        JobRecord,
        id=as_uuid,
        state=JobState,
        input=decode_json,
        progress=decode_json,
        result=decode_json,
        errors=_errors,
    )
    return next(iter(found), None)


def _errors(text: str | None) -> list[Any]:
    return decode_json(text) or []


def list_anchored(result: Result) -> bool:
    """Whether ``job_list``'s cursor (the job to list after) still exists."""
    first = result.first("anchored")
    return first is not None and bool(*first)


def job_summaries(result: Result) -> list[JobSummary]:
    """``job_list``'s rows (its columns named as :class:`JobSummary`'s fields); the row that
    only carries ``anchored`` (no job) is left out."""
    (where,) = result.positions("id")
    jobs = [row for row in result.rows if row[where] is not None]
    found = Result(result.statement, result.names, jobs)
    return records(found, JobSummary, id=as_uuid, state=JobState, error_count=int)


def expired_attempts(result: Result) -> list[ExpiredAttempt]:
    """``job_rescue_expired_scan``'s rows."""
    return [
        ExpiredAttempt(
            id=as_uuid(id_),
            claim_token=token,
            name=name,
            attempt=attempt,
            max_attempts=max_attempts,
            started=not body_pending,
        )
        for id_, token, name, attempt, max_attempts, body_pending in result.picked(
            "id", "claim_token", "name", "attempt", "max_attempts", "body_pending"
        )
    ]


def rescued_jobs(result: Result) -> list[RescuedJob]:
    """``job_rescue_expired``'s rows."""
    return [
        RescuedJob(id=as_uuid(id_), name=name, action=action, attempt=attempt, tenant_id=tenant)
        for id_, name, action, attempt, tenant in result.picked(
            "id", "name", "action", "attempt", "tenant_id"
        )
    ]


def ids(result: Result, column: str = "id") -> set[uuid.UUID]:
    """The job ids a fenced write or an insert answered."""
    (position,) = result.positions(column)
    rows = result.rows
    first = next(iter(rows), None)
    if first is not None and isinstance(first[position], uuid.UUID):  # no call per row
        return set(map(itemgetter(position), rows))
    return {as_uuid(row[position]) for row in rows}


def handed(result: Result) -> tuple[set[uuid.UUID], set[uuid.UUID], set[uuid.UUID]]:
    """``job_settle_handoff``'s rows: the settled ids, the next runs granted a slot, and the
    settled runs whose concurrency rows were found."""
    kinds: dict[str, set[uuid.UUID]] = {"settled": set(), "granted": set(), "held": set()}
    for job_id, kind in result.picked("id", "kind"):
        kinds[kind].add(as_uuid(job_id))
    return kinds["settled"], kinds["granted"], kinds["held"]


def batch_inserted(result: Result, size: int) -> set[uuid.UUID] | None:
    """``job_enqueue_many``'s one row: ``None`` when all ``size`` rows of the batch were
    inserted, else the ids of those that were."""
    created, inserted = result.first("created", "ids") or (0, None)
    if created == size:
        return None
    return {as_uuid(job_id) for job_id in inserted or ()}


def enqueue_answers(result: Result) -> dict[uuid.UUID, uuid.UUID]:
    """``job_enqueue_many_resolve``'s rows: the job each skipped request id resolves to. A row
    holding the requested id wins over the live row holding its key."""
    found = list(result.picked("requested", "found", "same_id"))
    answers: dict[uuid.UUID, uuid.UUID] = {}
    for wanted in (True, False):
        for requested, holder, same_id in found:
            if bool(same_id) is wanted:
                answers.setdefault(as_uuid(requested), as_uuid(holder))
    return answers
