"""The rules of PostgreSQL's ``jsonb`` that the drivers without PostgreSQL (memory, Redis) keep
as it does: which JSON texts it refuses, how ``->>`` reads a value, how an error entry reads
back. A module of its own, so that the Redis driver keeps them without importing the memory
driver (a Redis worker's start-up)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any, NoReturn

from ultimat3_jobs.errors import StoreRefused
from ultimat3_jobs.serialization import check_json


def jsonb_text(value: Any) -> str | None:
    """A jsonb value as ``->>`` reads it: text as is, anything else as its JSON text."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, separators=(", ", ": "))


def _refuse_constant(token: str) -> NoReturn:
    raise ValueError(f"{token} is not valid JSON")


_JSONB_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


_TAKEN_AS_IS = frozenset({"null", "{}", "[]", "true", "false"})
"""Texts jsonb takes as they are: the usual results and progress values skip the parse."""


def check_jsonb_text(text: str, column: str) -> None:
    """Refuse JSON text jsonb would refuse (``StoreRefused`` naming ``column``), rather than
    fail at read time."""
    if isinstance(text, str) and text in _TAKEN_AS_IS:
        return
    try:
        _JSONB_DECODER.decode(text)
    except (TypeError, ValueError) as exc:
        raise StoreRefused(reason=f"{column}: not valid JSON text for jsonb: {exc}") from exc


def check_step_texts(output_json: str, error_json: str | None) -> None:
    """Refuse a step record's output or error text where ``x_job_steps``' jsonb columns
    would (``step_put``'s check, before anything is written)."""
    check_jsonb_text(output_json, "output")
    if error_json is not None:
        check_jsonb_text(error_json, "error")


def checked_progress(progress: Mapping[uuid.UUID, str] | None) -> Mapping[uuid.UUID, str]:
    """A heartbeat's progress texts by job id (none given: empty), each refused where the
    ``progress`` jsonb column would (``job_heartbeat_many``'s check, before anything is
    written)."""
    given = progress or {}
    for text in given.values():
        check_jsonb_text(text, "progress")
    return given


def jsonb_entry(entry: dict[str, Any]) -> dict[str, Any]:
    # Through JSON and back, so an error entry reads back as jsonb would give it; what jsonb
    # refuses (NUL, a lone surrogate) is refused here too.
    try:
        check_json(entry, root="error", max_depth=4)
    except ValueError as exc:  # JobInputInvalid, naming the field and the rule
        raise StoreRefused(reason=getattr(exc, "message", str(exc))) from exc
    normal: dict[str, Any] = json.loads(json.dumps(entry, allow_nan=False))
    return normal
