"""``manage.py jobs``: the operator CLI. ``jobs tasks`` lists the cron tasks with their next
fire, last fire and pause state (``--json`` for machines)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.models import JobPause, SchedulerTask
from ultimat3_jobs.registry import registry


def task_rows() -> list[dict[str, Any]]:
    """Every declared task with its schedule and its durable state."""
    database = get_settings().database
    tasks = registry.tasks()
    states = {
        row.name: row
        for row in SchedulerTask.objects.using(database).filter(name__in=[t.name for t in tasks])
    }
    paused = set(
        JobPause.objects.using(database).filter(scope="task").values_list("target", flat=True)
    )
    now = datetime.now(UTC)
    rows = []
    for definition in tasks:
        schedule = definition.schedule
        assert schedule is not None
        state = states.get(definition.name)
        after = state.watermark if state is not None else now
        rows.append(
            {
                "name": definition.name,
                "cron": schedule.cron,
                "tz": schedule.tz,
                "catch_up": schedule.catch_up,
                "next_fire": schedule.next_after(max(after, now)).isoformat(),
                "last_fire": state.last_fire_at.isoformat()
                if state is not None and state.last_fire_at
                else None,
                "last_job_id": str(state.last_job_id) if state and state.last_job_id else None,
                "paused": definition.name in paused,
            }
        )
    return rows


class Command(BaseCommand):
    help = "Operate ultimat3-jobs: inspect what is scheduled."

    def add_arguments(self, parser: CommandParser) -> None:
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
        tasks = verbs.add_parser("tasks", help="List cron tasks: next fire, last fire, pause.")
        tasks.add_argument("--json", action="store_true", help="One JSON document.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["verb"] == "tasks":
            self._tasks(as_json=options["json"])

    def _tasks(self, *, as_json: bool) -> None:
        rows = task_rows()
        if as_json:
            self.stdout.write(json.dumps(rows, indent=2))
            return
        if not rows:
            self.stdout.write("No cron tasks are declared.")
            return
        header = ("TASK", "CRON", "TZ", "CATCH-UP", "NEXT FIRE", "LAST FIRE", "PAUSED")
        lines = [header] + [
            (
                r["name"],
                r["cron"],
                r["tz"],
                r["catch_up"],
                r["next_fire"],
                r["last_fire"] or "-",
                "yes" if r["paused"] else "no",
            )
            for r in rows
        ]
        widths = [max(len(str(line[i])) for line in lines) for i in range(len(header))]
        for line in lines:
            self.stdout.write(
                "  ".join(str(cell).ljust(w) for cell, w in zip(line, widths, strict=True))
            )
