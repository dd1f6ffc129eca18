"""``manage.py jobs``: the operator CLI.

``jobs list|show|cancel|requeue|promote|remove|pause|resume|stats|cron``. Every verb acts through
:mod:`ultimat3_jobs.operator` on the configured driver, as the admin does; every read takes
``--json`` for machines. A refusal prints its ``X_*`` code and message and exits with status 1.
"""

from __future__ import annotations

import getpass
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.drivers.base import JOB_PAGE_MAX, JobDriver
from ultimat3_jobs.errors import JobsError
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.models import JobPause, SchedulerTask
from ultimat3_jobs.operator import introspection, verbs
from ultimat3_jobs.operator.redaction import REDACTED
from ultimat3_jobs.types import BulkResult, JobState, PauseScope

LIST_LIMIT_DEFAULT = 50
LAST_ERROR_WIDTH = 60


def cron_rows() -> list[dict[str, Any]]:
    """Every declared cron job with its schedule and its durable state."""
    database = get_settings().database
    crons = registry.crons()
    states = {
        row.name: row
        for row in SchedulerTask.objects.using(database).filter(name__in=[c.name for c in crons])
    }
    paused = set(
        JobPause.objects.using(database).filter(scope="task").values_list("target", flat=True)
    )
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


def _paused_by() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        return "cli"


OneJobVerb = Callable[[JobDriver, str], Any]
ManyJobsVerb = Callable[[JobDriver, Sequence[str]], BulkResult]

JOB_VERBS: dict[str, tuple[OneJobVerb, ManyJobsVerb, str]] = {
    "cancel": (verbs.cancel, verbs.cancel_many, "cancelled"),
    "requeue": (verbs.requeue, verbs.requeue_many, "requeued"),
    "promote": (verbs.promote, verbs.promote_many, "made due now"),
    "remove": (verbs.remove, verbs.remove_many, "removed"),
}


class Command(BaseCommand):
    help = (
        "Operate ultimat3-jobs: list and show jobs; cancel, requeue, promote or remove them; "
        "pause and resume queues, job names and cron jobs; read queue stats and cron jobs."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        verbs_parser = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

        listing = verbs_parser.add_parser(
            "list", help="List jobs, newest first, one page at a time."
        )
        for option, meaning in (
            ("--state", "in this state (queued, running, completed, failed, cancelled)"),
            ("--queue", "in this queue"),
            ("--name", "of this job name"),
        ):
            listing.add_argument(
                option,
                action="append",
                metavar=option.strip("-").upper(),
                help=f"Only jobs {meaning}; repeat it or separate values with commas.",
            )
        listing.add_argument("--tenant", help="Only jobs of this tenant id.")
        listing.add_argument("--search", help="A job id or an idempotency key, matched exactly.")
        listing.add_argument(
            "--after", metavar="CURSOR", help="The cursor a previous page printed."
        )
        listing.add_argument(
            "--limit",
            type=int,
            default=LIST_LIMIT_DEFAULT,
            help=f"Jobs per page, 1 to {JOB_PAGE_MAX} (default {LIST_LIMIT_DEFAULT}).",
        )
        listing.add_argument(
            "--reveal",
            action="store_true",
            help="Show error messages and the idempotency keys of sensitive jobs.",
        )
        listing.add_argument("--json", action="store_true", help="One JSON document.")

        show = verbs_parser.add_parser("show", help="Show one job: its row, input, errors.")
        show.add_argument("job_id", metavar="ID")
        show.add_argument(
            "--reveal",
            action="store_true",
            help="Show input, progress, result, error messages and tracebacks, and the "
            "idempotency key, as stored.",
        )
        show.add_argument("--json", action="store_true", help="One JSON document.")

        helps = {
            "cancel": "Cancel queued or running jobs.",
            "requeue": "Put finished jobs back to queued, due now; or every failed job of a name.",
            "promote": "Make queued jobs that are due later due now.",
            "remove": "Delete jobs that are not running.",
        }
        for verb, text in helps.items():
            action = verbs_parser.add_parser(verb, help=text)
            action.add_argument(
                "job_ids",
                metavar="ID",
                nargs="*" if verb == "requeue" else "+",
                help="One id (refused with its code when it cannot act), or many (counted).",
            )
            if verb == "cancel":
                action.add_argument(
                    "--reason",
                    default=None,
                    help="Why, kept in each job's errors with who cancelled it (cli:<user>).",
                )
            if verb == "requeue":
                action.add_argument(
                    "--failed",
                    metavar="NAME",
                    help="Instead of ids: requeue the failed jobs of this job name, oldest first.",
                )
                action.add_argument(
                    "--limit",
                    type=int,
                    default=None,
                    help="With --failed: at most this many jobs (default: all).",
                )

        for verb in ("pause", "resume"):
            action = verbs_parser.add_parser(
                verb, help=f"{verb.capitalize()} a queue, a job name or a cron job."
            )
            target = action.add_mutually_exclusive_group(required=True)
            target.add_argument("--queue", metavar="QUEUE")
            target.add_argument("--job", metavar="NAME")
            # The pause scope keeps its stored name, "task"; --task stays as an alias.
            target.add_argument("--cron", "--task", dest="task", metavar="NAME")
            if verb == "pause":
                action.add_argument("--reason", default="", help="Why, for whoever reads it.")

        stats = verbs_parser.add_parser(
            "stats", help="Queues (depth per state, oldest ready), pauses, last hour's counters."
        )
        stats.add_argument("--json", action="store_true", help="One JSON document.")

        for name in ("cron", "tasks"):
            listing = verbs_parser.add_parser(
                name,
                help="List cron jobs: next fire, last fire, pause."
                if name == "cron"
                else "Deprecated name of 'cron'.",
            )
            listing.add_argument("--json", action="store_true", help="One JSON document.")

    def handle(self, *args: Any, **options: Any) -> None:
        verb = options["verb"]
        try:
            if verb == "tasks":
                self.stderr.write("'jobs tasks' is deprecated: use 'jobs cron'")
            if verb in ("cron", "tasks"):
                self._cron(as_json=options["json"])
            elif verb == "list":
                self._list(options)
            elif verb == "show":
                self._show(options["job_id"], reveal=options["reveal"], as_json=options["json"])
            elif verb in JOB_VERBS:
                self._act(verb, options)
            elif verb in ("pause", "resume"):
                self._pause(verb, options)
            elif verb == "stats":
                self._stats(as_json=options["json"])
        except JobsError as exc:
            raise CommandError(str(exc)) from exc

    # -- reads ------------------------------------------------------------------------------

    def _list(self, options: dict[str, Any]) -> None:
        page = introspection.job_page(
            get_driver(),
            states=_split(options["state"]),
            queues=_split(options["queue"]),
            names=_split(options["name"]),
            tenant=options["tenant"],
            search=options["search"],
            after=options["after"],
            limit=options["limit"],
        )
        found = introspection.page_as_json(page, reveal=options["reveal"])
        if options["json"]:
            self.stdout.write(json.dumps(found, indent=2))
            return
        if not page.jobs:
            self.stdout.write("No jobs.")
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

    # -- verbs ------------------------------------------------------------------------------

    def _act(self, verb: str, options: dict[str, Any]) -> None:
        driver = get_driver()
        job_ids: list[str] = options["job_ids"]
        if verb == "requeue" and options.get("failed") is not None:
            if job_ids:
                raise CommandError("requeue takes job ids or --failed NAME, not both")
            limit = options.get("limit")
            if limit is not None and limit < 1:
                raise CommandError("--limit must be 1 or more")
            result = verbs.retry_failed(driver, options["failed"], limit)
            self.stdout.write(f"moved {result.moved}, remaining {result.remaining}")
            return
        if not job_ids:
            raise CommandError(f"{verb} needs at least one job id")
        one, many, done = JOB_VERBS[verb]
        if verb == "cancel":
            reason, who = options["reason"], _paused_by()
            one = partial(verbs.cancel, reason=reason, cancelled_by=who)
            many = partial(verbs.cancel_many, reason=reason, cancelled_by=who)
        if len(job_ids) == 1:
            acted = one(driver, job_ids[0])
            if acted is False:
                self.stdout.write(f"job {job_ids[0]} was already due; nothing to do")
            else:
                self.stdout.write(f"job {job_ids[0]} {done}")
            return
        result = many(driver, job_ids)
        self.stdout.write(f"moved {result.moved}, remaining {result.remaining}")

    def _pause(self, verb: str, options: dict[str, Any]) -> None:
        scope: PauseScope
        if options["queue"] is not None:
            scope, target = "queue", options["queue"]
        elif options["job"] is not None:
            scope, target = "job", options["job"]
        else:
            scope, target = "task", options["task"]
        driver = get_driver()
        if verb == "pause":
            changed = verbs.pause(
                driver, scope=scope, target=target, paused_by=_paused_by(), reason=options["reason"]
            )
            self.stdout.write(
                f"{scope} {target} paused" if changed else f"{scope} {target} was already paused"
            )
        else:
            changed = verbs.resume(driver, scope=scope, target=target)
            self.stdout.write(
                f"{scope} {target} resumed" if changed else f"{scope} {target} was not paused"
            )

    # -- cron jobs --------------------------------------------------------------------------

    def _cron(self, *, as_json: bool) -> None:
        rows = cron_rows()
        if as_json:
            self.stdout.write(json.dumps(rows, indent=2))
            return
        if not rows:
            self.stdout.write("No cron jobs are declared.")
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
        widths = [max(len(str(line[i])) for line in lines) for i in range(len(header))]
        for line in lines:
            self.stdout.write(
                "  ".join(str(cell).ljust(w) for cell, w in zip(line, widths, strict=True))
            )
