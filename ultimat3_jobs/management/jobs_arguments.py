"""The arguments of ``manage.py jobs``: one subcommand per verb, each with its options.

Layer: surface."""

from __future__ import annotations

from django.core.management.base import CommandParser

from ultimat3_jobs.drivers.base import JOB_PAGE_MAX
from ultimat3_jobs.management.jobs_consumers import add_consumer_verbs
from ultimat3_jobs.management.jobs_factories import add_factory_verbs
from ultimat3_jobs.management.jobs_leases import add_lease_verbs
from ultimat3_jobs.management.jobs_subjects import add_subject_verbs
from ultimat3_jobs.management.jobs_webhooks import add_webhook_verbs

LIST_LIMIT_DEFAULT = 50


def add_verbs(parser: CommandParser) -> None:
    """Add a subcommand per verb to ``parser`` (the command's own), its name in ``verb``."""
    verbs_parser = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    listing = verbs_parser.add_parser("list", help="List jobs, newest first, one page at a time.")
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
    listing.add_argument("--after", metavar="CURSOR", help="The cursor a previous page printed.")
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

    send = verbs_parser.add_parser(
        "send-event",
        help="Send an event: every job waiting for it (ctx.step.wait_for_event) resumes.",
    )
    send.add_argument("event", metavar="EVENT")
    send.add_argument("--key", default=None, help="Only the waits on this key.")
    send.add_argument(
        "--payload", default="null", metavar="JSON", help="What the waits answer (JSON)."
    )
    send.add_argument(
        "--ttl",
        type=float,
        default=None,
        metavar="SECONDS",
        help="How long the event is kept for waits that race it (default: a week).",
    )

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
        # --task stays as an alias of --cron (the pause scope's stored name).
        target.add_argument("--cron", "--task", dest="cron", metavar="NAME")
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

    add_webhook_verbs(verbs_parser)
    add_consumer_verbs(verbs_parser)
    add_subject_verbs(verbs_parser)
    add_lease_verbs(verbs_parser)
    add_factory_verbs(verbs_parser)
