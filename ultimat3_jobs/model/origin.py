"""The origin stamp: code that enqueues on behalf of a feature (today, a consumer's handle) runs
inside :func:`enqueuing_from`, so that every job it enqueues carries the origin as its
``enqueued_by`` (unless the call names its own) and a job the origin may not enqueue (the
consumer itself) is refused before anything is written.

Layer L3 (job model).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ultimat3_jobs.errors import ConsumerSelfEnqueue


@dataclass(frozen=True, slots=True)
class Origin:
    """Who enqueues (``label``, e.g. ``consumer:orders``) and the job names it may not enqueue."""

    label: str
    refused: frozenset[str] = frozenset()

    def check(self, job_name: str) -> None:
        if job_name in self.refused:
            raise ConsumerSelfEnqueue(
                f"{self.label} may not enqueue {job_name!r}: a consumer's handle cannot enqueue "
                "the consumer itself or its supervisor (it would feed itself); nothing was "
                "written",
                job=job_name,
                origin=self.label,
            )


_origin: contextvars.ContextVar[Origin | None] = contextvars.ContextVar(
    "ultimat3_jobs_origin", default=None
)


def current_origin() -> Origin | None:
    """The origin of the code running here, or ``None``."""
    return _origin.get()


@contextmanager
def enqueuing_from(origin: Origin) -> Iterator[Origin]:
    """Stamp every enqueue made inside the block with ``origin``."""
    token = _origin.set(origin)
    try:
        yield origin
    finally:
        _origin.reset(token)
