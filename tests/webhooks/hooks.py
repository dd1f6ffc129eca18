"""Webhooks declared for the tests (module level, as an app's jobs.py declares them)."""

from __future__ import annotations

from ultimat3_jobs import Retry
from ultimat3_jobs.webhooks import webhook

QUICK = Retry(attempts=3, backoff_base_seconds=0, backoff_cap_seconds=0, jitter=0)
ONCE = Retry(attempts=1)

order_paid = webhook("tests.wh.order-paid", event_type="order.paid", tenant="none", retry=QUICK)
order_paid_once = webhook(
    "tests.wh.order-paid-once", event_type="order.paid", tenant="none", retry=ONCE
)
org_event = webhook(
    "tests.wh.org-event",
    event_type="org.changed",
    tenant=lambda input: input["org_id"],
    retry=ONCE,
)
fixed = webhook(
    "tests.wh.fixed", event_type="fixed.ping", tenant="none", endpoint="fixed", retry=ONCE
)
