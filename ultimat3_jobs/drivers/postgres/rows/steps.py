"""Rows of the step statements (``sql/steps.sql``) by column name."""

from __future__ import annotations

from ultimat3_jobs.drivers.postgres.rows.result import Result
from ultimat3_jobs.drivers.steps_seam import StepRecord
from ultimat3_jobs.serialization import decode_json

STEP = (
    "name",
    "seq",
    "kind",
    "status",
    "output",
    "error",
    "event",
    "key",
    "wait_since",
    "wait_until",
    "updated_at",
)


def step_records(result: Result) -> list[StepRecord]:
    return [
        StepRecord(
            name=name,
            seq=seq,
            kind=kind,
            status=status,
            output=decode_json(output),
            error=decode_json(error),
            event=event,
            key=key,
            wait_since=wait_since,
            wait_until=wait_until,
            updated_at=updated_at,
        )
        for (
            name,
            seq,
            kind,
            status,
            output,
            error,
            event,
            key,
            wait_since,
            wait_until,
            updated_at,
        ) in result.picked(*STEP)
    ]


def step_record(result: Result) -> StepRecord | None:
    return next(iter(step_records(result)), None)
