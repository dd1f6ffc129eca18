"""``manage.py jobs consumers``: each declared consumer, its committed cursor and its lag.

Layer: surface. Reads through :mod:`ultimat3_jobs.consumers`.
"""

from __future__ import annotations

import json
from typing import Any

from ultimat3_jobs.consumers.declare import registered_consumers
from ultimat3_jobs.management.jobs_output import ListingVerbs


def add_consumer_verbs(verbs_parser: Any) -> None:
    """Add ``consumers`` to the ``jobs`` command's subcommands."""
    listing = verbs_parser.add_parser(
        "consumers", help="Each declared consumer: its cursor, items handled, lag."
    )
    listing.add_argument("--json", action="store_true", help="One JSON document.")


class ConsumerVerbs(ListingVerbs):
    """The ``consumers`` verb of ``manage.py jobs`` (mixed into its Command)."""

    def _consumers(self, options: dict[str, Any]) -> None:
        states = [spec.state() for spec in registered_consumers()]
        rows = [
            {
                "name": s.name,
                "cursor": s.cursor,
                "handled": s.handled,
                "turns": s.turns,
                "moved_at": s.moved_at.isoformat() if s.moved_at else None,
                "lag": s.lag,
            }
            for s in states
        ]
        if self._whole(options["json"], {"consumers": rows}, states, "no consumer is declared"):
            return
        self.stdout.write(f"{'NAME':<30} {'CURSOR':<24} {'HANDLED':>10} {'LAG':>10}  MOVED")
        for s in states:
            lag = "?" if s.lag is None else str(s.lag)
            moved = s.moved_at.isoformat(timespec="seconds") if s.moved_at else "never"
            cursor = "-" if s.cursor is None else json.dumps(s.cursor)[:24]
            self.stdout.write(f"{s.name:<30} {cursor:<24} {s.handled:>10} {lag:>10}  {moved}")
