"""``manage.py jobs subjects``: subject requests (exports and erasures), newest first, with
their state and counts per table; ``--subject ID`` finds one subject's requests by the id's
keyed digest. Never the data, never the subject id (the rows hold neither).

Layer: surface. Reads ``x_subject_requests`` as the admin does.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError
from django.db import router

from ultimat3_jobs.management.jobs_output import ListingVerbs
from ultimat3_jobs.models import SubjectRequest
from ultimat3_jobs.subjects.requests import subject_digest
from ultimat3_jobs.subjects.tables import REQUEST_KINDS, REQUEST_STATES

LIMIT_DEFAULT = 50
LIMIT_MAX = 1000


def add_subject_verbs(verbs_parser: Any) -> None:
    """Add ``subjects`` to the ``jobs`` command's subcommands."""
    listing = verbs_parser.add_parser(
        "subjects", help="Subject requests (export, erase): state and counts per table."
    )
    listing.add_argument("--subject", metavar="ID", help="Only the requests of this subject id.")
    listing.add_argument("--state", choices=REQUEST_STATES, help="Only requests in this state.")
    listing.add_argument("--kind", choices=REQUEST_KINDS, help="Only exports or erasures.")
    listing.add_argument(
        "--limit",
        type=int,
        default=LIMIT_DEFAULT,
        help=f"At most this many, 1 to {LIMIT_MAX} (default {LIMIT_DEFAULT}).",
    )
    listing.add_argument("--json", action="store_true", help="One JSON document.")


class SubjectVerbs(ListingVerbs):
    """The ``subjects`` verb of ``manage.py jobs`` (mixed into its Command)."""

    def _subjects(self, options: dict[str, Any]) -> None:
        limit = options["limit"]
        if not 1 <= limit <= LIMIT_MAX:
            raise CommandError(f"--limit must be from 1 to {LIMIT_MAX}; got {limit}")
        rows = SubjectRequest.objects.using(router.db_for_read(SubjectRequest)).order_by("-id")
        if options["subject"] is not None:
            rows = rows.filter(subject_digest=subject_digest(options["subject"]))
        if options["state"]:
            rows = rows.filter(state=options["state"])
        if options["kind"]:
            rows = rows.filter(kind=options["kind"])
        found = [_row(request) for request in rows[:limit]]
        if self._whole(options["json"], {"requests": found}, found, "no subject request matches"):
            return
        self.stdout.write(f"{'ID':>6} {'KIND':<6} {'STATE':<8} {'REQUESTED AT':<25} BY / COUNTS")
        for row in found:
            counts = ", ".join(f"{k} {v}" for k, v in sorted(row["counts"].items())) or "-"
            self.stdout.write(
                f"{row['id']:>6} {row['kind']:<6} {row['state']:<8} {row['requested_at']:<25} "
                f"{row['requested_by']}: {counts}"
            )


def _row(request: SubjectRequest) -> dict[str, Any]:
    return {
        "id": request.id,
        "kind": request.kind,
        "state": request.state,
        "requested_by": request.requested_by,
        "requested_at": request.requested_at.isoformat(timespec="seconds"),
        "finished_at": request.finished_at.isoformat() if request.finished_at else None,
        "job_id": str(request.job_id) if request.job_id else None,
        "counts": request.counts if isinstance(request.counts, dict) else {},
        "documents": request.documents if isinstance(request.documents, dict) else {},
        "error": request.error,
    }
