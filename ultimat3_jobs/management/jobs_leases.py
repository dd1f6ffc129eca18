"""``manage.py jobs leases``: every held lease key with its holders, declared limit and expiry;
``jobs leases release KEY`` frees a stuck concurrency key.

Layer: surface. Reads and acts through :mod:`ultimat3_jobs.operator.leases`.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError

from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.management.jobs_output import ListingVerbs
from ultimat3_jobs.operator import leases


def add_lease_verbs(verbs_parser: Any) -> None:
    """Add ``leases`` to the ``jobs`` command's subcommands."""
    listing = verbs_parser.add_parser(
        "leases",
        help="Held concurrency slots and rate stamps per key: holders, limit, expiry; "
        "'leases release KEY' frees a stuck concurrency key.",
    )
    listing.add_argument("action", nargs="?", choices=["release"], help="Free KEY's slots.")
    listing.add_argument("key", nargs="?", metavar="KEY", help="The lease key to release.")
    listing.add_argument("--json", action="store_true", help="One JSON document.")


class LeaseVerbs(ListingVerbs):
    """The ``leases`` verb of ``manage.py jobs`` (mixed into its Command)."""

    def _leases(self, options: dict[str, Any]) -> None:
        driver = get_driver()
        if options["action"] == "release":
            if options["key"] is None:
                raise CommandError("leases release needs a KEY (see 'jobs leases')")
            freed = leases.release(driver, options["key"])
            self.stdout.write(
                f"released {freed} slot{'s' if freed != 1 else ''} of {options['key']}; "
                "the runs that held them are not stopped"
            )
            return
        if options["key"] is not None:
            raise CommandError("a KEY goes with 'leases release KEY' only")
        overview = leases.leases_overview(driver)
        if self._whole(options["json"], overview, overview["keys"], "no lease is held"):
            return
        for key in overview["keys"]:
            limit = "?" if key["limit"] is None else str(key["limit"])
            self.stdout.write(
                f"{key['key']}  {key['kind']}  held {key['held']} of {limit}  "
                f"first expiry {key['expires_at']}"
            )
            for holder in key["holders"]:
                self.stdout.write(
                    f"  slot {holder['slot']}  job {holder['job_id']}  "
                    f"worker {holder['worker_id'] or '-'}  claim {holder['claim_token']}  "
                    f"acquired {holder['acquired_at']}  expires {holder['expires_at']}"
                )
        if overview["truncated"]:
            self.stdout.write("(more rows are held than one read shows)")
