"""The factories' verbs of ``manage.py jobs``: ``purge`` (``--dry-run`` prints what each target
would delete) and ``backfill`` (``--pending`` is the deploy gate: exit status 1 while any
declared backfill is not completed; ``backfill run NAME`` starts one).

Layer: surface. The purges are read from :mod:`ultimat3_jobs.factories`."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, OutputWrapper

from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.errors import BackfillCompleted, BackfillEnvironment
from ultimat3_jobs.factories.backfill import backfill_declaration
from ultimat3_jobs.factories.inspect import BackfillView, inspect_backfills
from ultimat3_jobs.factories.purge import plan, purge_declaration, retention_text
from ultimat3_jobs.factories.retention import DEFAULT_PURGE_NAME

FACTORY_VERBS = ("purge", "backfill")


def add_factory_verbs(verbs_parser: Any) -> None:
    """Add ``purge`` to the subcommands of ``manage.py jobs``."""
    action = verbs_parser.add_parser(
        "purge",
        help="Run a purge now (enqueue it), or with --dry-run print what each target would delete.",
    )
    action.add_argument(
        "name",
        nargs="?",
        default=DEFAULT_PURGE_NAME,
        metavar="NAME",
        help=f"A declared purge (default: {DEFAULT_PURGE_NAME}).",
    )
    action.add_argument(
        "--dry-run", action="store_true", help="Count what each target would delete; delete none."
    )
    action.add_argument("--json", action="store_true", help="With --dry-run: one JSON document.")

    gate = verbs_parser.add_parser(
        "backfill",
        help="List declared backfills and their runs; --pending exits 1 while any is not "
        "completed (a deploy gate); 'backfill run NAME' starts one.",
    )
    gate.add_argument("action", nargs="?", choices=["run"], help="'run' starts NAME now.")
    gate.add_argument("name", nargs="?", metavar="NAME")
    gate.add_argument(
        "--pending",
        action="store_true",
        help="Only backfills declared for the environment and not completed; exit 1 if any.",
    )
    gate.add_argument(
        "--environment", metavar="E", help="The environment (default: ULTIMAT3_JOBS ENVIRONMENT)."
    )
    gate.add_argument("--json", action="store_true", help="One JSON document.")


class FactoryVerbs:
    """Mixed into the ``jobs`` command."""

    stdout: OutputWrapper

    def _factory(self, verb: str, options: dict[str, Any]) -> None:
        if verb == "purge":
            self._purge(options["name"], dry_run=options["dry_run"], as_json=options["json"])
        elif options["action"] == "run":
            self._backfill_run(options["name"])
        else:
            self._backfills(options)

    def _backfill_run(self, name: str | None) -> None:
        if not name:
            raise CommandError("backfill run needs the NAME of a declared backfill")
        declaration = backfill_declaration(name)
        environment = get_settings().environment
        if not declaration.runs_in(environment):
            raise BackfillEnvironment(
                f"backfill {name!r} runs in {', '.join(declaration.environments or ())}; "
                f"this is {environment!r}"
            )
        view = next(v for v in inspect_backfills() if v.name == name)
        if view.state == "completed":
            raise BackfillCompleted(f"backfill {name!r} has a completed run: never run again")
        result = declaration.enqueue()
        self.stdout.write(f"backfill {name} started: job {result.id} ({result.status})")

    def _backfills(self, options: dict[str, Any]) -> None:
        views = inspect_backfills(environment=options["environment"])
        if options["pending"]:
            views = [view for view in views if view.pending]
        if options["json"]:
            self.stdout.write(json.dumps([_view_json(view) for view in views], indent=2))
        else:
            self.stdout.write(f"{'BACKFILL':<40} {'STATE':<10} {'ROWS':>10}  NOTE")
            for view in views:
                rows = view.run.rows_done if view.run else 0
                note = f"waits for {', '.join(view.blocked_by)}" if view.blocked_by else ""
                if not view.applies:
                    note = "not for this environment"
                self.stdout.write(f"{view.name:<40} {view.state:<10} {rows:>10}  {note}".rstrip())
        if options["pending"] and views:
            raise CommandError(f"{len(views)} backfill(s) pending", returncode=1)

    def _purge(self, name: str, *, dry_run: bool, as_json: bool) -> None:
        declaration = purge_declaration(name)
        if not dry_run:
            result = declaration.handle.enqueue()
            self.stdout.write(f"purge {name} enqueued: job {result.id} ({result.status})")
            return
        rows = plan(declaration)
        if as_json:
            document = [
                {
                    "target": row.target,
                    "retention_seconds": row.retention_seconds,
                    "cutoff": row.cutoff.isoformat() if row.cutoff else None,
                    "rows": row.rows,
                    "capped": row.capped,
                }
                for row in rows
            ]
            self.stdout.write(json.dumps({"purge": name, "targets": document}, indent=2))
            return
        self.stdout.write(f"purge {name} (dry run: nothing deleted)")
        self.stdout.write(f"{'TARGET':<18} {'KEEP':>6}  {'OLDER THAN':<25} WOULD DELETE")
        for row in rows:
            cutoff = row.cutoff.isoformat(timespec="seconds") if row.cutoff else "-"
            count = f"{row.rows}+" if row.capped else str(row.rows)
            self.stdout.write(
                f"{row.target:<18} {retention_text(row.retention_seconds):>6}  {cutoff:<25} {count}"
            )


def _view_json(view: BackfillView) -> dict[str, Any]:
    run = view.run
    return {
        "name": view.name,
        "scope": view.scope,
        "state": view.state,
        "pending": view.pending,
        "applies": view.applies,
        "environments": list(view.environments) if view.environments is not None else None,
        "requires": list(view.requires),
        "blocked_by": list(view.blocked_by),
        "runs": view.runs,
        "run": None
        if run is None
        else {
            "run_id": str(run.run_id),
            "status": run.status,
            "environment": run.environment,
            "rows_done": run.rows_done,
            "batches_done": run.batches_done,
            "cursor": run.cursor,
            "started_at": run.started_at.isoformat() if run.started_at else None,
            "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        },
    }
