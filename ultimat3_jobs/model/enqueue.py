"""The one enqueue path: validate everything, then hand the driver finished requests.

Layer L3 (job model). Every refusal happens here, before the first write, and names the field
and the rule. The driver only writes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ultimat3_jobs.conf import Settings, get_settings
from ultimat3_jobs.drivers import get_driver, get_outbox
from ultimat3_jobs.drivers.base import JobDriver, write_now
from ultimat3_jobs.errors import (
    JobDuplicate,
    JobInputInvalid,
    JobOptionInvalid,
    JobPriorityInvalid,
    JobQueueInvalid,
    JobRunAtInvalid,
)
from ultimat3_jobs.model.context import refuse_if_aborted
from ultimat3_jobs.model.options import EnqueueOptions, options_from
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.model.signature import check_signature
from ultimat3_jobs.model.tracing import ambient_traceparent, explicit_traceparent
from ultimat3_jobs.model.transactions import AfterCommits, Route, route
from ultimat3_jobs.serialization import encode_json
from ultimat3_jobs.types import (
    PRIORITY_MAX,
    PRIORITY_MIN,
    QUEUE_NAME_PATTERN,
    EnqueueRequest,
    EnqueueResult,
    new_job_id,
)

if TYPE_CHECKING:
    from ultimat3_jobs.model.definitions import JobDefinition

IDEMPOTENCY_KEY_MAX_LENGTH = 255
TENANT_MAX_LENGTH = 200
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
    if (
        isinstance(priority, bool)
        or not isinstance(priority, int)
        or not PRIORITY_MIN <= priority <= PRIORITY_MAX
    ):
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
        or not _storable_text(key)
    ):
        raise JobOptionInvalid(
            f"idempotency_key must be a string of 1 to {IDEMPOTENCY_KEY_MAX_LENGTH} characters "
            f"without NUL; got {key!r:.80}",
            field="idempotency_key",
            rule="idempotency-key",
        )
    return key


def _storable_text(text: str) -> bool:
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _tenant(definition: JobDefinition, input: Mapping[str, Any]) -> str | None:
    try:
        tenant_id = definition.tenant_for(input)
    except Exception as exc:
        raise JobInputInvalid(
            f"the tenant of job {definition.name!r} could not be decided from its input: "
            f"{type(exc).__name__}: {exc}",
            field="tenant",
            rule="tenant-from-input",
        ) from exc
    if tenant_id is not None and (
        len(tenant_id) > TENANT_MAX_LENGTH or not _storable_text(tenant_id)
    ):
        raise JobInputInvalid(
            f"the tenant of job {definition.name!r} must be text of at most {TENANT_MAX_LENGTH} "
            f"characters; got {tenant_id!r:.80}",
            field="tenant",
            rule="tenant-text",
        )
    return tenant_id


def _on_conflict(options: EnqueueOptions) -> None:
    if options.on_conflict not in ("dedupe", "error"):
        raise JobOptionInvalid(
            f"on_conflict must be 'dedupe' or 'error'; got {options.on_conflict!r}",
            field="on_conflict",
            rule="on-conflict",
        )


def check_input_signature(definition: JobDefinition, input: Mapping[str, Any]) -> None:
    """Refuse input that does not bind to the body's keyword parameters (the check is compiled
    once per signature: :mod:`ultimat3_jobs.model.signature`)."""
    signature = definition.signature
    if signature is not None:
        check_signature(signature, input, where=definition.location)


def _enqueued_by(options: EnqueueOptions) -> str | None:
    value = options.enqueued_by
    if value is not None and (not isinstance(value, str) or len(value) > 200):
        raise JobOptionInvalid(
            f"enqueued_by must be a string of at most 200 characters; got {value!r:.80}",
            field="enqueued_by",
            rule="enqueued-by",
        )
    return value


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
    queue = _queue(definition, options, settings)
    priority = _priority(definition, options)
    run_at, delay_seconds = _timing(options)
    key = _idempotency_key(options)
    _on_conflict(options)
    enqueued_by = _enqueued_by(options)
    check_input_signature(definition, input)
    input_json = encode_json(
        dict(input), max_depth=settings.input_max_depth, max_bytes=settings.input_max_bytes
    )
    tenant_id = _tenant(definition, input)
    if isinstance(traceparent, _Ambient):
        traceparent = request_traceparent(options, settings)
    return EnqueueRequest(
        id=new_job_id(),
        name=definition.name,
        queue=queue,
        input_json=input_json,
        priority=priority,
        run_at=run_at,
        delay_seconds=delay_seconds,
        idempotency_key=key,
        on_conflict=options.on_conflict,
        max_attempts=definition.retry.max_attempts(),
        lease_seconds=definition.lease_seconds,
        tenant_id=tenant_id,
        enqueued_by=enqueued_by,
        traceparent=traceparent,
    )


def request_traceparent(options: EnqueueOptions, settings: Settings) -> str | None:
    """The traceparent a job enqueued now carries: the caller's (refused when malformed),
    else the enqueuing code's own (see :mod:`ultimat3_jobs.model.tracing`)."""
    if options.traceparent is not None:
        return explicit_traceparent(options.traceparent)
    return ambient_traceparent(settings)


def _route(driver: JobDriver, publish: str, settings: Settings) -> Route:
    """Where an enqueue writes, given the caller's open transactions (see
    :mod:`ultimat3_jobs.model.transactions`)."""
    return route(driver, publish=publish, outbox_database=settings.outbox_database)


def _stage_or_defer(requests: list[EnqueueRequest], where: Route) -> bool:
    """Stage ``requests`` in the outbox, or defer them until the caller's transactions commit,
    as ``where`` says; answers False when they are to be written to the store at once."""
    if where.path == "stage":
        get_outbox().outbox_stage_many(requests=requests, notify=True)
        return True
    if where.path == "defer":
        AfterCommits(where.waits_for, lambda: _publish_after_commit(requests))
        return True
    return False


def _publish_after_commit(requests: list[EnqueueRequest]) -> None:
    """A deferred enqueue, once every transaction it waited for has committed: routed again
    (a transaction may still be open around that commit), then written."""
    driver = get_driver()
    if not _stage_or_defer(requests, _route(driver, "on-commit", get_settings())):
        driver.job_enqueue_many(requests=requests)


def _store_write(options: EnqueueOptions) -> AbstractContextManager[None]:
    """``publish="now"`` writes at once, even with a driver that waits for commits."""
    return write_now() if options.publish == "now" else nullcontext()


def enqueue(
    definition: JobDefinition, input: Mapping[str, Any], options: EnqueueOptions
) -> EnqueueResult:
    """Validate and write one job. With ``on_conflict="error"`` a live duplicate raises
    :class:`~ultimat3_jobs.errors.JobDuplicate` (nothing was written). Called from the body
    of a job whose attempt was cancelled, raises :class:`~ultimat3_jobs.errors.JobAborted`."""
    refuse_if_aborted()
    settings = get_settings()
    request = build_request(definition, input, options, settings=settings)
    driver = get_driver()
    where = _route(driver, options.publish, settings)
    if where.path != "store":
        _refuse_error_mode(options)
    if _stage_or_defer([request], where):
        return EnqueueResult(request.id, "staged")
    with _store_write(options):
        result = driver.job_enqueue(request=request)
    if result.deduped and request.on_conflict == "error":
        raise JobDuplicate(
            f"job {definition.name!r} with idempotency key {request.idempotency_key!r} is "
            f"already live as {result.id}",
            existing_id=result.id,
        )
    return result


def enqueue_many(
    definition: JobDefinition, inputs: Iterable[Mapping[str, Any]], options: EnqueueOptions
) -> list[EnqueueResult]:
    """Validate every input, then write them all, one statement per 1,000. Called from the
    body of a job whose attempt was cancelled, raises
    :class:`~ultimat3_jobs.errors.JobAborted`."""
    refuse_if_aborted()
    if options.on_conflict == "error":
        raise JobOptionInvalid(
            "enqueue_many answers deduped jobs and cannot raise for one of them: use "
            "on_conflict='dedupe' (the default) with enqueue_many",
            field="on_conflict",
            rule="batch-dedupe",
        )
    if options.idempotency_key is not None:
        raise JobOptionInvalid(
            "one idempotency_key for a whole batch would dedupe it to one job; enqueue those "
            "jobs one at a time with their own keys",
            field="idempotency_key",
            rule="batch-key",
        )
    settings = get_settings()
    traceparent = request_traceparent(options, settings)
    requests = []
    for index, input in enumerate(inputs):
        try:
            requests.append(
                build_request(
                    definition, input, options, settings=settings, traceparent=traceparent
                )
            )
        except JobInputInvalid as exc:
            field = f"inputs[{index}]" + (exc.field[len("input") :] if exc.field else "")
            raise type(exc)(f"inputs[{index}]: {exc.message}", field=field, rule=exc.rule) from None
    if not requests:
        return []
    driver = get_driver()
    if _stage_or_defer(requests, _route(driver, options.publish, settings)):
        return [EnqueueResult(request.id, "staged") for request in requests]
    with _store_write(options):
        return driver.job_enqueue_many(requests=requests)


def _refuse_error_mode(options: EnqueueOptions) -> None:
    if options.on_conflict == "error":
        raise JobOptionInvalid(
            "on_conflict='error' cannot be answered for a staged job: its duplicate is only "
            "known when the relay publishes it after commit. Use the default 'dedupe', or "
            "publish='now'.",
            field="on_conflict",
            rule="staged-dedupe",
        )


def enqueue_by_name(name: str, input: Mapping[str, Any], **options: Any) -> EnqueueResult:
    """Enqueue the job declared under ``name`` (for callers that hold a name, not a handle).
    An undeclared name is refused with :class:`~ultimat3_jobs.errors.JobUnknown`: dispatch
    goes through the registry only."""
    if not isinstance(name, str):
        raise JobOptionInvalid(
            f"a job name must be a string; got {type(name).__name__}", field="name", rule="str"
        )
    return enqueue(registry.get(name).definition, input, options_from(options))
