"""Pieces of a job's page: the progress bar, the blocks of failed attempts, the buttons that
fit the job, and how values read there.

Layer: surface. What the page may show of the job is decided before these run, by
:func:`~ultimat3_jobs.operator.redaction.disclosure` (through
:func:`~ultimat3_jobs.operator.introspection.record_as_json`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.operator.redaction import Disclosure

PAUSE_NAME_ACTION = "pause_job_names"
RESUME_NAME_ACTION = "resume_job_names"


def pretty(value: Any) -> str:
    """A JSON value as indented text."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def duration(later: datetime | None, earlier: datetime | None) -> float | None:
    """Seconds from ``earlier`` to ``later``; ``None`` when either is missing."""
    if later is None or earlier is None:
        return None
    return (later - earlier).total_seconds()


def progress_percent(progress: Any) -> float | None:
    """How far a job is, 0 to 100, when its progress reports a numeric ``current`` and a
    positive ``total``; ``None`` otherwise (a redacted progress included)."""
    if not isinstance(progress, Mapping):
        return None
    current, total = progress.get("current"), progress.get("total")
    if (
        isinstance(current, int | float)
        and isinstance(total, int | float)
        and not isinstance(current, bool)
        and not isinstance(total, bool)
        and total > 0
    ):
        return max(0.0, min(100.0, 100.0 * current / total))
    return None


def attempt_errors(errors: Iterable[Any]) -> list[dict[str, Any]]:
    """One block per failed attempt, in order, from the errors as disclosed."""
    blocks = []
    for error in errors:
        if not isinstance(error, Mapping):
            error = {"message": str(error)}
        blocks.append(
            {
                "attempt": error.get("attempt"),
                "error_class": error.get("error_class") or "",
                "message": error.get("message") or "",
                "traceback": error.get("traceback") or "",
                "worker_id": error.get("worker_id") or "",
                "at": error.get("at") or "",
            }
        )
    return blocks


def name_paused(driver: JobDriver, name: str) -> bool:
    """Whether job name ``name`` is paused (one read of the pauses)."""
    return any(pause.scope == "job" and pause.target == name for pause in driver.pause_list())


def fitting_buttons(
    buttons: Iterable[tuple[str, str]], *, driver: JobDriver, name: str
) -> list[tuple[str, str]]:
    """``buttons`` (action name, label) without the pause-or-resume button that does not fit:
    "Pause this job name" while the name runs, "Resume this job name" while it is paused,
    never both. The pauses are read only when one of them is offered."""
    buttons = list(buttons)
    if not any(action in (PAUSE_NAME_ACTION, RESUME_NAME_ACTION) for action, _ in buttons):
        return buttons
    unfit = PAUSE_NAME_ACTION if name_paused(driver, name) else RESUME_NAME_ACTION
    return [(action, label) for action, label in buttons if action != unfit]


def step_rows(driver: JobDriver, job_id: uuid.UUID, shown: Disclosure) -> list[dict[str, Any]]:
    """A durable job's stored steps (one read), in the order they were written: name, kind,
    status, when it last moved, its output as the viewer may see it (redacted like input), and
    for a wait what it waits for and until when."""
    rows = []
    for step in driver.step_get_many(job_id=job_id):
        waits_for = None
        if step.status == "waiting":
            waits_for = "sleep" if step.event is None else f"event {step.event}"
            if step.key:
                waits_for += f" (key {step.key})"
        output = shown.payload(step.output)
        rows.append(
            {
                "name": step.name,
                "kind": step.kind,
                "status": step.status,
                "at": step.updated_at,
                "output_text": None if step.output is None else pretty(output),
                "waits_for": waits_for,
                "until": step.wait_until if step.status == "waiting" else None,
            }
        )
    return rows
