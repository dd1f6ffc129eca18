"""``manage.py jobs``: the operator CLI.

``jobs list|show|cancel|requeue|promote|remove|pause|resume|stats|cron|send-event|webhooks|
consumers|subjects|leases``, and the factories' verbs (``purge``, ``backfill``).
Every verb acts through :mod:`ultimat3_jobs.operator` on the configured driver, as the admin does
(``send-event`` through :func:`~ultimat3_jobs.send_event`, as a job would); every read takes
``--json`` for machines. A refusal prints its ``X_*`` code and message and exits with status 1.
The verbs' arguments are in :mod:`~ultimat3_jobs.management.jobs_arguments`, the reads in
:mod:`~ultimat3_jobs.management.jobs_reads`; the verbs that change jobs are here.
"""

from __future__ import annotations

import getpass
import json
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.errors import JobsError
from ultimat3_jobs.management.jobs_arguments import add_verbs
from ultimat3_jobs.management.jobs_consumers import ConsumerVerbs
from ultimat3_jobs.management.jobs_factories import FACTORY_VERBS, FactoryVerbs
from ultimat3_jobs.management.jobs_leases import LeaseVerbs
from ultimat3_jobs.management.jobs_reads import ReadVerbs
from ultimat3_jobs.management.jobs_subjects import SubjectVerbs
from ultimat3_jobs.management.jobs_webhooks import WebhookVerbs
from ultimat3_jobs.model.events import send_event
from ultimat3_jobs.operator import verbs
from ultimat3_jobs.types import CRON_SCOPE, BulkResult, PauseScope


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


class Command(
    FactoryVerbs, ReadVerbs, WebhookVerbs, ConsumerVerbs, SubjectVerbs, LeaseVerbs, BaseCommand
):
    help = (
        "Operate ultimat3-jobs: list and show jobs; cancel, requeue, promote or remove them; "
        "pause and resume queues, job names and cron jobs; read queue stats and cron jobs."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_verbs(parser)

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
            elif verb == "send-event":
                self._send_event(options)
            elif verb == "webhooks":
                self._webhooks(options)
            elif verb == "consumers":
                self._consumers(options)
            elif verb == "subjects":
                self._subjects(options)
            elif verb == "leases":
                self._leases(options)
            elif verb in FACTORY_VERBS:
                self._factory(verb, options)
        except JobsError as exc:
            raise CommandError(str(exc)) from exc

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

    def _send_event(self, options: dict[str, Any]) -> None:
        try:
            payload = json.loads(options["payload"])
        except ValueError as exc:
            raise CommandError(f"--payload must be JSON: {exc}") from None
        ttl = options["ttl"]
        ended = (
            send_event(options["event"], key=options["key"], payload=payload)
            if ttl is None
            else send_event(options["event"], key=options["key"], payload=payload, ttl=ttl)
        )
        self.stdout.write(f"event {options['event']} sent; it ended {ended} wait(s)")

    def _pause(self, verb: str, options: dict[str, Any]) -> None:
        scope: PauseScope
        if options["queue"] is not None:
            scope, target = "queue", options["queue"]
        elif options["job"] is not None:
            scope, target = "job", options["job"]
        else:
            scope, target = CRON_SCOPE, options["cron"]
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
