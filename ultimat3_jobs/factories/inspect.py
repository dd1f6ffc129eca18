"""``inspect_backfills()``: the registry (what exists) against the ledger (what ran). The one
read behind ``manage.py jobs backfill``, the admin's backfills page and the metrics.

Layer: factories."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ultimat3_jobs.carry import carry
from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.drivers.backfill_seam import BackfillRun
from ultimat3_jobs.factories.backfill import declared_backfills

BackfillState = Literal["pending", "running", "completed", "failed"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BackfillView:
    """One declared backfill in one environment. ``state`` is ``completed`` once any run
    completed, else its newest run's status, else ``pending``; ``pending`` says whether the
    deploy gate waits on it (it applies here and is not completed); ``blocked_by`` lists the
    ``requires`` not yet completed; ``run`` is the completed run, else the newest; ``history``
    every recorded run, newest first (``runs`` of them)."""

    name: str
    scope: str
    environments: tuple[str, ...] | None
    requires: tuple[str, ...]
    applies: bool
    state: BackfillState
    pending: bool
    blocked_by: tuple[str, ...]
    run: BackfillRun | None
    runs: int
    history: tuple[BackfillRun, ...] = ()


def inspect_backfills(*, environment: str | None = None) -> list[BackfillView]:
    """Every declared backfill as seen from ``environment`` (``ENVIRONMENT`` unless given), by
    name, with its ledger state. Reads the ledger once."""
    here = get_settings().environment if environment is None else environment
    runs = get_driver().backfill_list()
    by_key: dict[tuple[str, str], list[BackfillRun]] = {}
    for run in runs:  # newest first
        by_key.setdefault((run.name, run.scope), []).append(run)
    completed = {
        key for key, found in by_key.items() if any(r.status == "completed" for r in found)
    }
    views = []
    for declaration in declared_backfills():
        key = (declaration.name, declaration.scope)
        found = by_key.get(key, [])
        done = next((r for r in found if r.status == "completed"), None)
        newest = found[0] if found else None
        state: BackfillState = "completed" if done else (newest.status if newest else "pending")
        applies = declaration.runs_in(here)
        views.append(
            carry(
                BackfillView,
                declaration,
                applies=applies,
                state=state,
                pending=applies and state != "completed",
                blocked_by=tuple(
                    r for r in declaration.requires if (r, declaration.scope) not in completed
                ),
                run=done or newest,
                runs=len(found),
                history=tuple(found),
            )
        )
    return views
