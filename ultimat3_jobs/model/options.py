"""Per-call enqueue options (``handle.using(...)``), checked by name.

Layer L3 (job model): imports L1 only, so the declarations and the enqueue path both use it
without importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ultimat3_jobs.errors import JobOptionInvalid
from ultimat3_jobs.types import OnConflict, PublishMode


class _Resolve:
    def __repr__(self) -> str:
        return "RESOLVE"


RESOLVE: Any = _Resolve()
"""``tenant``'s default: the enqueuer's tenant is what ``TENANT_RESOLVER`` answers."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EnqueueOptions:
    """Per-call options, set with :meth:`JobHandle.using`. ``None`` keeps the job's own."""

    run_at: datetime | None = None
    delay: float | timedelta | None = None
    priority: int | None = None
    queue: str | None = None
    idempotency_key: str | None = None
    on_conflict: OnConflict = "dedupe"
    enqueued_by: str | None = None
    publish: PublishMode = "on-commit"
    traceparent: str | None = None
    """A W3C traceparent to carry instead of the active span's; a malformed one is refused."""
    tenant: str | None = RESOLVE
    """The enqueuer's tenant (``None``: no tenant) instead of ``TENANT_RESOLVER``'s answer."""


def options_from(values: Mapping[str, Any]) -> EnqueueOptions:
    """Per-call options from keywords; an unknown one is refused, naming it."""
    unknown = set(values) - set(EnqueueOptions.__dataclass_fields__)
    if unknown:
        known = ", ".join(EnqueueOptions.__dataclass_fields__)
        raise JobOptionInvalid(
            f"unknown enqueue option(s) {', '.join(sorted(unknown))}; known: {known}",
            field=sorted(unknown)[0],
            rule="known-option",
        )
    return EnqueueOptions(**values)
