"""``manage.py jobs webhooks``: list endpoints, send one signed test ping, and the operator
verbs of an endpoint (enable, disable, rotate its secret).

Layer: surface. Acts through :mod:`ultimat3_jobs.webhooks.ledger` and
:func:`ultimat3_jobs.webhooks.outbound.ping`, as the admin does.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, OutputWrapper

from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.errors import WebhookDestinationRefused
from ultimat3_jobs.models import WebhookEndpoint
from ultimat3_jobs.webhooks import ledger
from ultimat3_jobs.webhooks.outbound import ping


def add_webhook_verbs(verbs_parser: Any) -> None:
    """Add ``webhooks`` and its own verbs to the ``jobs`` command's subcommands."""
    hooks = verbs_parser.add_parser("webhooks", help="Webhook endpoints: list, test, operate.")
    actions = hooks.add_subparsers(dest="webhook_verb", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="Every endpoint, its health, never its secret.")
    listing.add_argument("--json", action="store_true", help="One JSON document.")
    test = actions.add_parser("test", help="Send one signed webhook.test event to ENDPOINT now.")
    test.add_argument("endpoint", metavar="ENDPOINT")
    for verb, text in (
        ("enable", "Let deliveries reach ENDPOINT again (its failure count back to zero)."),
        ("disable", "Stop deliveries to ENDPOINT: they fail at once, sending nothing."),
        ("rotate-secret", "Give ENDPOINT a new secret (printed once); the old one overlaps."),
    ):
        action = actions.add_parser(verb, help=text)
        action.add_argument("endpoint", metavar="ENDPOINT")
        if verb == "disable":
            action.add_argument("--reason", default="disabled by an operator (cli)")


class WebhookVerbs:
    """The ``webhooks`` verb of ``manage.py jobs`` (mixed into its Command)."""

    stdout: OutputWrapper

    def _webhooks(self, options: dict[str, Any]) -> None:
        verb, name = options["webhook_verb"], options.get("endpoint")
        if verb == "list":
            self._webhook_list(as_json=options["json"])
        elif verb == "test":
            try:
                result = ping(name)
            except WebhookDestinationRefused as exc:
                raise CommandError(str(exc)) from exc
            told = f"answered {result.status}" if result.status is not None else result.error
            self.stdout.write(
                f"{result.event_id} to {name}: {told} in {result.duration_ms} ms"
                + (f"\n{result.excerpt}" if result.excerpt and not result.ok else "")
            )
            if not result.ok:
                raise CommandError(f"the test ping to {name} failed: {told}")
        elif verb == "enable":
            changed = ledger.enable(name)
            self.stdout.write(f"endpoint {name} " + ("enabled" if changed else "was enabled"))
        elif verb == "disable":
            changed = ledger.disable(name, reason=options["reason"])
            self.stdout.write(f"endpoint {name} " + ("disabled" if changed else "was disabled"))
        elif verb == "rotate-secret":
            secret = ledger.rotate_secret(name).secret
            self.stdout.write(f"endpoint {name}: new secret {secret}")

    def _webhook_list(self, *, as_json: bool) -> None:
        rows = [
            {
                "name": e.name,
                "url": e.url,
                "tenant_id": e.tenant_id,
                "enabled": e.enabled,
                "consecutive_failures": e.consecutive_failures,
                "disabled_at": e.disabled_at.isoformat() if e.disabled_at else None,
                "disabled_reason": e.disabled_reason,
            }
            for e in WebhookEndpoint.objects.using(get_settings().database).order_by("name")
        ]
        if as_json:
            self.stdout.write(json.dumps(rows, indent=2))
            return
        for row in rows:
            state = "enabled" if row["enabled"] else f"DISABLED ({row['disabled_reason']})"
            self.stdout.write(
                f"{row['name']}\t{row['url']}\t{state}\tfailures {row['consecutive_failures']}"
            )
