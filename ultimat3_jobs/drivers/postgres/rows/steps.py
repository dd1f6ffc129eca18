"""Rows of the step statements (``sql/steps.sql``) by column name."""

from __future__ import annotations

from ultimat3_jobs.drivers.postgres.rows.result import Result, records
from ultimat3_jobs.drivers.steps_seam import StepRecord
from ultimat3_jobs.serialization import decode_json


def step_records(result: Result) -> list[StepRecord]:
    """The step rows, whose columns are named as :class:`StepRecord`'s fields."""
    return records(result, StepRecord, output=decode_json, error=decode_json)


def step_record(result: Result) -> StepRecord | None:
    return next(iter(step_records(result)), None)
