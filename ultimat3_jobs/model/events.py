"""``send_event``: the sending side of ``ctx.step.wait_for_event``.

Layer L3 (job model).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.model.context import current_tenant, refuse_if_aborted
from ultimat3_jobs.model.step_rules import EVENT_TTL_DEFAULT, check_event, check_ttl, payload_json


def send_event(
    event: str,
    *,
    key: str | None = None,
    payload: Any = None,
    ttl: float | timedelta = EVENT_TTL_DEFAULT,
) -> int:
    """Send an event: every job waiting for it (``ctx.step.wait_for_event(..., event, key=key)``,
    a wait that began at or before now) gets ``payload`` and is due now; the event is kept for
    ``ttl`` (seconds or a timedelta, a week by default) for waits that race it. Answers how many
    waits it ended. On PostgreSQL it writes on the caller's connection: inside
    ``transaction.atomic()`` the event exists only if the transaction commits. Refused with
    ``X_EVENT_INVALID`` (nothing sent), and from a cancelled job's body with ``X_ABORTED``."""
    checked_event, checked_key = check_event(event, key)
    text = payload_json(payload)
    seconds = check_ttl(ttl)
    refuse_if_aborted()
    sent = get_driver().event_send(
        name=checked_event,
        key=checked_key,
        payload_json=text,
        tenant_id=current_tenant(),
        ttl_seconds=seconds,
    )
    return sent.ended
