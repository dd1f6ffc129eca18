"""Receivers declared for the tests, and the URLs that mount them."""

from __future__ import annotations

import base64

from django.urls import include, path

from ultimat3_jobs import job
from ultimat3_jobs.webhooks import standard_webhooks_verify, webhook_receiver, webhook_receiver_urls

SECRET = "whsec_" + base64.b64encode(b"receiver-test-secret-0123456789!").decode()
OLD_SECRET = "whsec_" + base64.b64encode(b"the-previous-secret-of-the-tests").decode()
HANDLED: list[tuple[str, object]] = []


@job(name="tests.wh.received", tenant="none", sensitive=["payload"])
def received(ctx, *, event_id: str, payload: object) -> None:
    HANDLED.append((event_id, payload))


shop = webhook_receiver(
    "shop",
    verify=standard_webhooks_verify([SECRET, OLD_SECRET]),
    handle_job=received,
    max_bytes=1_000_000,
)
small = webhook_receiver(
    "small", verify=standard_webhooks_verify(lambda: SECRET), handle_job=received, max_bytes=100
)

urlpatterns = [path("webhooks/", include(webhook_receiver_urls()))]
