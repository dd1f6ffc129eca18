"""What the queues page and the dashboard share: ages as a person reads them, and the table of
queues built from :func:`~ultimat3_jobs.operator.introspection.queues_overview`.

Layer: surface.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse

from ultimat3_jobs.types import JobState, WorkerRecord

STATES: tuple[str, ...] = tuple(state.value for state in JobState)


def format_age(seconds: float | None) -> str:
    """``42s``, ``3m 12s``, ``2h 05m``, ``3d 4h``; ``-`` for none."""
    if seconds is None:
        return "-"
    whole = int(max(0.0, seconds))
    if whole < 1:
        return "<1s"
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def changelist_url(admin_site_name: str, **params: str) -> str:
    """The job changelist filtered by ``queue`` and ``state`` (the filters' own parameters)."""
    base = reverse(f"{admin_site_name}:ultimat3_jobs_job_changelist", current_app=admin_site_name)
    query = {}
    if params.get("queue"):
        query["queue"] = params["queue"]
    if params.get("state"):
        query["state__exact"] = params["state"]
    return f"{base}?{urlencode(query)}" if query else base


def queue_rows(
    overview: Sequence[dict[str, Any]],
    workers: Sequence[WorkerRecord] = (),
    *,
    admin_site_name: str,
    link: bool,
) -> list[dict[str, Any]]:
    """One row per queue for the templates: each state's depth (``at_least`` when the count
    is a lower bound) with a link to those jobs, the oldest ready job's age, the pause, and
    the live workers that claim from it with their slots and the demand they report (the
    largest report: every worker of a queue counts the same ready jobs)."""
    serving: dict[str, dict[str, int]] = {}
    for worker in workers:
        for queue in worker.queues:
            entry = serving.setdefault(queue, {"workers": 0, "slots": 0, "demand": 0})
            entry["workers"] += 1
            entry["slots"] += worker.slots
            entry["demand"] = max(entry["demand"], int(worker.demand.get(queue, 0)))
    names = [row["queue"] for row in overview]
    names += sorted(set(serving) - set(names))
    by_name = {row["queue"]: row for row in overview}
    rows = []
    for name in names:
        row = by_name.get(name)
        depth = row["depth"] if row else dict.fromkeys(STATES, 0)
        at_least = set(row["at_least"]) if row else set()
        oldest = row["oldest_ready_seconds"] if row else None
        rows.append(
            {
                "queue": name,
                "paused": bool(row and row["paused"]),
                "cells": [
                    {
                        "state": state,
                        "jobs": depth.get(state, 0),
                        "at_least": state in at_least,
                        "url": changelist_url(admin_site_name, queue=name, state=state)
                        if link
                        else None,
                    }
                    for state in STATES
                ],
                "queue_url": changelist_url(admin_site_name, queue=name) if link else None,
                "oldest_ready_seconds": oldest,
                "oldest_ready": format_age(oldest),
                **serving.get(name, {"workers": 0, "slots": 0, "demand": 0}),
            }
        )
    return rows
