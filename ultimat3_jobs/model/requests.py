"""One enqueue's request: every option and the input validated, the request a driver writes.

Layer L3 (job model). Every refusal names the field and the rule. What all the requests of one
call share (queue, priority, timing, key, attribution, trace, attempts) is checked once per
call (:class:`SharedRequest`); each input then costs its own checks only: the mapping, the
signature check compiled once per signature, one encode, the tenant and a new id. The tenant's
rules are :mod:`ultimat3_jobs.model.tenancy`'s.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ultimat3_jobs.batches import RequestBatch, SharedColumns
from ultimat3_jobs.conf import Settings, get_settings
from ultimat3_jobs.errors import (
    JobInputInvalid,
    JobOptionInvalid,
    JobPriorityInvalid,
    JobQueueInvalid,
    JobRunAtInvalid,
)
from ultimat3_jobs.model.options import EnqueueOptions
from ultimat3_jobs.model.origin import current_origin
from ultimat3_jobs.model.signature import check_signature, input_check
from ultimat3_jobs.model.tenancy import call_tenant, enqueuer_tenant, row_tenant, storable_text
from ultimat3_jobs.model.tracing import ambient_traceparent, explicit_traceparent
from ultimat3_jobs.types import (
    PRIORITY_MAX,
    PRIORITY_MIN,
    QUEUE_NAME_PATTERN,
    EnqueueRequest,
    new_job_id,
)
from ultimat3_jobs.values import whole_number

if TYPE_CHECKING:
    from ultimat3_jobs.model.definitions import JobDefinition

IDEMPOTENCY_KEY_MAX_LENGTH = 255
DELAY_SECONDS_LIMIT = 10 * 366 * 86400.0
_QUEUE = re.compile(QUEUE_NAME_PATTERN)


class _Ambient:
    """The default of ``build_request(traceparent=...)``: stamp the enqueuing code's own."""


AMBIENT = _Ambient()


def _queue(definition: JobDefinition, options: EnqueueOptions, settings: Settings) -> str:
    queue = options.queue if options.queue is not None else definition.queue
    if queue is None:
        return settings.default_queue
    if not isinstance(queue, str) or not _QUEUE.fullmatch(queue):
        raise JobQueueInvalid(
            f"queue {queue!r} is not a queue name: 1-63 characters matching {QUEUE_NAME_PATTERN}",
            field="queue",
            rule="queue-name",
        )
    return queue


def _priority(definition: JobDefinition, options: EnqueueOptions) -> int:
    priority = options.priority if options.priority is not None else definition.priority
    if not whole_number(priority, PRIORITY_MIN, PRIORITY_MAX):
        raise JobPriorityInvalid(
            f"priority must be an integer from {PRIORITY_MIN} to {PRIORITY_MAX} (higher runs "
            f"first); got {priority!r}",
            field="priority",
            rule="priority-range",
        )
    return priority


def _timing(options: EnqueueOptions) -> tuple[datetime | None, float | None]:
    run_at, delay = options.run_at, options.delay
    if run_at is not None and delay is not None:
        raise JobRunAtInvalid(
            "give run_at or delay, not both", field="run_at", rule="run-at-or-delay"
        )
    if run_at is not None:
        if not isinstance(run_at, datetime):
            raise JobRunAtInvalid(
                f"run_at must be an aware datetime; got {type(run_at).__name__} {run_at!r}",
                field="run_at",
                rule="aware-datetime",
            )
        if run_at.tzinfo is None or run_at.utcoffset() is None:
            raise JobRunAtInvalid(
                f"run_at must be timezone-aware; got the naive datetime {run_at.isoformat()} "
                "(use django.utils.timezone.now() or datetime(..., tzinfo=UTC))",
                field="run_at",
                rule="aware-datetime",
            )
        return run_at, None
    if delay is not None:
        seconds = delay.total_seconds() if isinstance(delay, timedelta) else delay
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, (int, float))
            or not math.isfinite(seconds)
            or not 0 <= seconds <= DELAY_SECONDS_LIMIT
        ):
            raise JobRunAtInvalid(
                f"delay must be a finite number of seconds (or a timedelta) from 0 to "
                f"{DELAY_SECONDS_LIMIT:.0f}; got {delay!r}",
                field="delay",
                rule="delay-range",
            )
        return None, float(seconds)
    return None, None


def _idempotency_key(options: EnqueueOptions) -> str | None:
    key = options.idempotency_key
    if key is None:
        return None
    if (
        not isinstance(key, str)
        or not 1 <= len(key) <= IDEMPOTENCY_KEY_MAX_LENGTH
        or not storable_text(key)
    ):
        raise JobOptionInvalid(
            f"idempotency_key must be a string of 1 to {IDEMPOTENCY_KEY_MAX_LENGTH} characters "
            f"without NUL; got {key!r:.80}",
            field="idempotency_key",
            rule="idempotency-key",
        )
    return key


def _on_conflict(options: EnqueueOptions) -> None:
    if options.on_conflict not in ("dedupe", "error"):
        raise JobOptionInvalid(
            f"on_conflict must be 'dedupe' or 'error'; got {options.on_conflict!r}",
            field="on_conflict",
            rule="on-conflict",
        )


def check_input_signature(definition: JobDefinition, input: Mapping[str, Any]) -> None:
    """Refuse input that does not bind to the body's keyword parameters (the check is compiled
    once per definition: :attr:`JobDefinition.input_shape`)."""
    shape = definition.input_shape
    if shape is not None and shape.admits(input):  # every run's check: no name built
        return
    if definition.signature is not None:
        check_signature(definition.signature, input, where=definition.location)


def _enqueued_by(options: EnqueueOptions) -> str | None:
    value = options.enqueued_by
    if value is not None and (not isinstance(value, str) or len(value) > 200):
        raise JobOptionInvalid(
            f"enqueued_by must be a string of at most 200 characters; got {value!r:.80}",
            field="enqueued_by",
            rule="enqueued-by",
        )
    return value


@dataclass(frozen=True, slots=True)
class SharedRequest:
    """What every request of one enqueue call shares, validated once per call."""

    definition: JobDefinition
    settings: Settings
    enqueuer_tenant: str | None
    """The enqueuer's tenant, or ``UNKNOWN`` (:mod:`ultimat3_jobs.model.tenancy`)."""
    check_input: Callable[[Mapping[str, Any]], None]
    """The body signature's check of one input (:func:`check_input_signature`), looked up
    once per call."""

    columns: SharedColumns
    """The columns every request of the call has alike."""

    def encode_input(self, input: Mapping[str, Any]) -> str:
        """Validate one input and answer its JSON text (the per-item work of ``enqueue_many``
        but the tenant: the compiled signature check, one encode)."""
        if type(input) is not dict and not isinstance(input, Mapping):
            raise JobInputInvalid(
                f"input must be a mapping of keyword arguments; got {type(input).__name__}",
                field="input",
                rule="mapping",
            )
        self.check_input(input)
        return self.settings.encode_stored(input if type(input) is dict else dict(input))

    def row_tenant(self, input: Mapping[str, Any]) -> str | None:
        """The tenant of the row written for ``input`` (after :meth:`encode_input`); refused
        with :class:`~ultimat3_jobs.errors.JobTenantMismatch` when not the enqueuer's."""
        return row_tenant(self.definition, input, self.enqueuer_tenant)

    def call_tenant(self) -> tuple[bool, str | None]:
        """``(True, tenant)`` when every row of this call keeps one tenant whatever its input
        (:func:`~ultimat3_jobs.model.tenancy.call_tenant`): no tenant asked per job."""
        return call_tenant(self.definition, self.enqueuer_tenant)

    def request(self, input: Mapping[str, Any], job_id: uuid.UUID) -> EnqueueRequest:
        """Validate one input and answer its request, with the id ``job_id``."""
        input_json = self.encode_input(input)
        (request,) = RequestBatch(self.columns, [job_id], [input_json], [self.row_tenant(input)])
        return request


def shared_request(
    definition: JobDefinition,
    options: EnqueueOptions,
    settings: Settings,
    traceparent: str | _Ambient | None,
) -> SharedRequest:
    queue = _queue(definition, options, settings)
    priority = _priority(definition, options)
    run_at, delay_seconds = _timing(options)
    key = _idempotency_key(options)
    _on_conflict(options)
    enqueued_by = _enqueued_by(options)
    origin = current_origin()
    if origin is not None:
        origin.check(definition.name)
        enqueued_by = enqueued_by if enqueued_by is not None else origin.label
    if isinstance(traceparent, _Ambient):
        traceparent = request_traceparent(options, settings)
    return SharedRequest(
        definition=definition,
        settings=settings,
        enqueuer_tenant=enqueuer_tenant(options, settings),
        check_input=input_check(definition.signature, where=definition.location),
        columns=SharedColumns(
            name=definition.name,
            queue=queue,
            priority=priority,
            run_at=run_at,
            delay_seconds=delay_seconds,
            idempotency_key=key,
            on_conflict=options.on_conflict,
            max_attempts=definition.retry.max_attempts(),
            lease_seconds=definition.lease_seconds,
            enqueued_by=enqueued_by,
            traceparent=traceparent,
        ),
    )


def build_request(
    definition: JobDefinition,
    input: Mapping[str, Any],
    options: EnqueueOptions,
    *,
    settings: Settings | None = None,
    traceparent: str | _Ambient | None = AMBIENT,
) -> EnqueueRequest:
    """Validate one enqueue and answer the request a driver writes. Raises a subclass of
    :class:`~ultimat3_jobs.errors.EnqueueRefused` naming the field and the rule.
    ``traceparent`` defaults to :func:`request_traceparent` of ``options``."""
    settings = settings or get_settings()
    if not isinstance(input, Mapping):
        raise JobInputInvalid(
            f"input must be a mapping of keyword arguments; got {type(input).__name__}",
            field="input",
            rule="mapping",
        )
    return shared_request(definition, options, settings, traceparent).request(input, new_job_id())


def request_traceparent(options: EnqueueOptions, settings: Settings) -> str | None:
    """The traceparent a job enqueued now carries: the caller's (refused when malformed),
    else the enqueuing code's own (see :mod:`ultimat3_jobs.model.tracing`)."""
    if options.traceparent is not None:
        return explicit_traceparent(options.traceparent)
    return ambient_traceparent(settings)
