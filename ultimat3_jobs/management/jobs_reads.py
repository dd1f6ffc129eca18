"""The reads of ``manage.py jobs`` (``list``, ``show``, ``stats``, ``cron``), as text for a
terminal or as one JSON document: what each prints, and the table and time forms they share.

Layer: surface. Jobs are read through :mod:`ultimat3_jobs.operator.introspection`; the cron jobs'
durable state through the driver (``scheduler_cron_read``, ``pause_list``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.management.jobs_output import ListingVerbs
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.operator import introspection
from ultimat3_jobs.operator.redaction import REDACTED
from ultimat3_jobs.types import CRON_SCOPE, JobState

LAST_ERROR_WIDTH = 60


def cron_rows() -> list[dict[str, Any]]:
    """Every declared cron job with its schedule and its durable state (read through the
    driver, on every driver)."""
    driver = get_driver()
    crons = registry.crons()
    states = driver.scheduler_cron_read(names=[c.name for c in crons])
    paused = {pause.target for pause in driver.pause_list() if pause.scope == CRON_SCOPE}
    now = datetime.now(UTC)
    rows = []
    for definition in crons:
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


def _split(values: Sequence[str] | None) -> list[str] | None:
    """Repeated and comma-separated option values as one list; ``None`` when none given."""
    found = [part.strip() for value in values or () for part in value.split(",") if part.strip()]
    return found or None


def _table(rows: Sequence[Sequence[Any]]) -> list[str]:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _ago(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.1f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    if seconds < 172800:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


def _clip(text: str | None, width: int) -> str:
    if not text:
        return "-"
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _last_error(job: dict[str, Any]) -> str | None:
    """A list line's last error: its message, or its class when the message is withheld."""
    message = job["last_error_message"]
    if message == REDACTED:
        return f"{job['last_error_class']}: {REDACTED}"
    return message


class ReadVerbs(ListingVerbs):
    """The read verbs of :class:`~ultimat3_jobs.management.commands.jobs.Command`."""

    def _list(self, options: dict[str, Any]) -> None:
        page = get_driver().job_list(
            states=_split(options["state"]),
            queues=_split(options["queue"]),
            names=_split(options["name"]),
            tenant=options["tenant"],
            search=options["search"],
            after=options["after"],
            limit=options["limit"],
        )
        found = introspection.page_as_json(page, reveal=options["reveal"])
        if self._whole(options["json"], found, page.jobs, "No jobs.", indent=2):
            return
        header = ("ID", "NAME", "QUEUE", "STATE", "ATTEMPT", "RUN AT", "CREATED", "LAST ERROR")
        rows = [
            (
                str(job.id),
                job.name,
                job.queue,
                job.state.value,
                f"{job.attempt}/{job.max_attempts}",
                job.run_at.isoformat(timespec="seconds"),
                job.created_at.isoformat(timespec="seconds"),
                _clip(_last_error(shown), LAST_ERROR_WIDTH),
            )
            for job, shown in zip(page.jobs, found["jobs"], strict=True)
        ]
        for line in _table([header, *rows]):
            self.stdout.write(line)
        if page.next_cursor is not None:
            self.stdout.write(f"next page: --after {page.next_cursor}")

    def _show(self, job_id: str, *, reveal: bool, as_json: bool) -> None:
        detail = introspection.job_detail(get_driver(), job_id, reveal=reveal)
        if as_json:
            self.stdout.write(json.dumps(detail, indent=2))
            return
        for key in (
            "id",
            "name",
            "queue",
            "state",
            "priority",
            "attempt",
            "max_attempts",
            "run_at",
            "idempotency_key",
            "tenant_id",
            "enqueued_by",
            "worker_id",
            "lease_expires_at",
            "created_at",
            "started_at",
            "finished_at",
        ):
            value = detail[key]
            self.stdout.write(f"{key + ':':<18}{'-' if value is None else value}")
        note = " (redacted; --reveal shows it)" if detail["redacted"] else ""
        for key in ("input", "progress", "result"):
            text = json.dumps(detail[key], indent=2, ensure_ascii=False)
            self.stdout.write(f"{key}:{note if key == 'input' else ''}")
            for line in text.splitlines():
                self.stdout.write(f"  {line}")
        errors = detail["errors"]
        self.stdout.write(f"errors: {len(errors)}")
        for error in errors:
            self.stdout.write(
                f"  attempt {error.get('attempt')} at {error.get('at') or '-'} on "
                f"{error.get('worker_id') or '-'}: {error.get('error_class')}: "
                f"{error.get('message')}"
            )
            for line in str(error.get("traceback") or "").rstrip().splitlines():
                self.stdout.write(f"    {line}")
        steps = detail["steps"]
        if steps:
            self.stdout.write(f"steps: {len(steps)}")
        for step in steps:
            line = f"  {step['seq']}. {step['name']} ({step['kind']}) {step['status']}"
            if step["status"] == "waiting":
                what = "sleep" if step["event"] is None else f"event {step['event']}"
                key = f" key {step['key']}" if step["key"] else ""
                line += f": {what}{key} until {step['wait_until'] or '-'}"
            elif step["output"] is not None:
                line += f": {json.dumps(step['output'], ensure_ascii=False)}"
            self.stdout.write(line)

    def _stats(self, *, as_json: bool) -> None:
        since = datetime.now(UTC) - introspection.STATS_COUNTER_WINDOW
        found = introspection.stats(get_driver(), since=since)
        if as_json:
            self.stdout.write(json.dumps(found, indent=2))
            return
        states = [state.value for state in JobState]
        if found["queues"]:
            header = ("QUEUE", *(s.upper() for s in states), "OLDEST READY", "PAUSED")
            rows = [
                (
                    queue["queue"],
                    *(
                        f"{queue['depth'][s]}+" if s in queue["at_least"] else queue["depth"][s]
                        for s in states
                    ),
                    _ago(queue["oldest_ready_seconds"]),
                    "yes" if queue["paused"] else "no",
                )
                for queue in found["queues"]
            ]
            for line in _table([header, *rows]):
                self.stdout.write(line)
        else:
            self.stdout.write("No queue holds a job.")
        for pause in found["pauses"]:
            by = f" by {pause['paused_by']}" if pause["paused_by"] else ""
            why = f": {pause['reason']}" if pause["reason"] else ""
            self.stdout.write(f"paused {pause['scope']} {pause['target']}{by}{why}")
        self.stdout.write("")
        names = found["counters"]["names"]
        if not names:
            self.stdout.write("Nothing settled in the last hour.")
            return
        self.stdout.write("Settled in the last hour:")
        outcomes = [key for key in names[0] if key != "name"]
        header = ("NAME", *(outcome.upper() for outcome in outcomes))
        rows = [(row["name"], *(row[outcome] for outcome in outcomes)) for row in names]
        for line in _table([header, *rows]):
            self.stdout.write(line)

    def _cron(self, *, as_json: bool) -> None:
        rows = cron_rows()
        if self._whole(as_json, rows, rows, "No cron jobs are declared.", indent=2):
            return
        header = ("NAME", "CRON", "TZ", "CATCH-UP", "NEXT FIRE", "LAST FIRE", "PAUSED")
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
        for line in _table(lines):
            self.stdout.write(line)
