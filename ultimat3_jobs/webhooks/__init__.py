"""Webhooks out and in: ``webhook`` delivers one signed event to one endpoint, with a ledger of
every attempt; ``webhook_receiver`` answers a Django view that verifies a delivery before it
parses it and enqueues its job before it acknowledges it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ultimat3_jobs.lazy import lazy_exports

if TYPE_CHECKING:
    from ultimat3_jobs.webhooks.inbound import (
        ReceivedEvent,
        standard_webhooks_verify,
        webhook_receiver,
        webhook_receiver_urls,
    )
    from ultimat3_jobs.webhooks.outbound import WebhookHandle, webhook

__all__ = [
    "ReceivedEvent",
    "WebhookHandle",
    "standard_webhooks_verify",
    "webhook",
    "webhook_receiver",
    "webhook_receiver_urls",
]

# The names load on first use: importing this package (as models.py does, for the tables) touches
# neither settings nor the HTTP client.
__getattr__ = lazy_exports(
    __name__,
    {
        "ReceivedEvent": ".inbound",
        "WebhookHandle": ".outbound",
        "standard_webhooks_verify": ".inbound",
        "webhook": ".outbound",
        "webhook_receiver": ".inbound",
        "webhook_receiver_urls": ".inbound",
    },
)
