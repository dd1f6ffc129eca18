"""The factories' verbs of ``manage.py jobs``: ``purge`` (``--dry-run`` prints what each target
would delete) and, with the backfills, ``backfill``.

Layer: surface. The purges are read from :mod:`ultimat3_jobs.factories`."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import OutputWrapper

from ultimat3_jobs.factories.purge import plan, purge_declaration
from ultimat3_jobs.factories.retention import DEFAULT_PURGE_NAME

FACTORY_VERBS = ("purge",)


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


def _retention(seconds: float | None) -> str:
    if seconds is None:
        return "kept"
    if seconds >= 86400 and seconds % 86400 == 0:
        return f"{int(seconds // 86400)}d"
    return f"{seconds:g}s"


class FactoryVerbs:
    """Mixed into the ``jobs`` command."""

    stdout: OutputWrapper

    def _factory(self, verb: str, options: dict[str, Any]) -> None:
        if verb == "purge":
            self._purge(options["name"], dry_run=options["dry_run"], as_json=options["json"])

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
                f"{row.target:<18} {_retention(row.retention_seconds):>6}  {cutoff:<25} {count}"
            )
