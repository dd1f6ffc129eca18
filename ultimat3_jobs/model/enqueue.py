"""The one enqueue path: validate everything, then hand the driver finished requests.

Layer L3 (job model). Every refusal happens before the first write and names the field and the
rule (the requests are built and checked in :mod:`ultimat3_jobs.model.requests`). The driver
only writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from ultimat3_jobs.batches import RequestBatch
from ultimat3_jobs.conf import Settings, get_settings
from ultimat3_jobs.drivers import get_driver, get_outbox
from ultimat3_jobs.drivers.base import JobDriver, write_now
from ultimat3_jobs.errors import (
    JobDuplicate,
    JobInputInvalid,
    JobOptionInvalid,
    JobTenantMismatch,
)
from ultimat3_jobs.model.context import refuse_if_aborted
from ultimat3_jobs.model.options import EnqueueOptions, options_from
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.model.requests import (
    SharedRequest,
    build_request,
    request_traceparent,
    shared_request,
)
from ultimat3_jobs.model.transactions import AfterCommits, Route, route
from ultimat3_jobs.types import (
    EnqueueRequest,
    EnqueueResult,
    new_job_ids,
)

if TYPE_CHECKING:
    from ultimat3_jobs.model.definitions import JobDefinition


def _route(driver: JobDriver, publish: str, settings: Settings) -> Route:
    """Where an enqueue writes, given the caller's open transactions (see
    :mod:`ultimat3_jobs.model.transactions`)."""
    return route(driver, publish=publish, outbox_database=settings.outbox_database)


def _stage_or_defer(requests: Sequence[EnqueueRequest], where: Route) -> bool:
    """Stage ``requests`` in the outbox, or defer them until the caller's transactions commit,
    as ``where`` says; answers False when they are to be written to the store at once."""
    if where.path == "stage":
        get_outbox().outbox_stage_many(requests=requests, notify=True)
        return True
    if where.path == "defer":
        AfterCommits(where.waits_for, lambda: _publish_after_commit(requests))
        return True
    return False


def _publish_after_commit(requests: Sequence[EnqueueRequest]) -> None:
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
    """Validate every input, then write them all: on PostgreSQL one statement per 1,000, or one
    COPY for more than 1,000 jobs due now with no key (``job_enqueue_copy``). Called from the
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
    shared: SharedRequest | None = None
    encoded: list[str] = []
    tenants: list[str | None] = []
    fixed, tenant = False, None
    append_json, append_tenant = encoded.append, tenants.append
    for index, input in enumerate(inputs):
        try:
            if shared is None:  # the options are checked once, at the first input
                shared = shared_request(definition, options, settings, traceparent)
                encode_input, row_tenant = shared.encode_input, shared.row_tenant
                fixed, tenant = shared.call_tenant()
            append_json(encode_input(input))
            if not fixed:
                append_tenant(row_tenant(input))
        except (JobInputInvalid, JobTenantMismatch) as exc:  # nothing of the batch is written
            raise type(exc)(
                f"inputs[{index}]: {exc.message}",
                field=_item_field(index, exc.field),
                rule=exc.rule,
            ) from None
    if shared is None:
        return []
    if fixed:  # one tenant for every row, asked once
        tenants = [tenant] * len(encoded)
    requests = RequestBatch(
        shared.columns, new_job_ids(len(encoded)), encoded, tenants, minted=True
    )
    driver = get_driver()
    if _stage_or_defer(requests, _route(driver, options.publish, settings)):
        return [EnqueueResult(job_id, "staged") for job_id in requests.ids]
    with _store_write(options):
        return driver.job_enqueue_many(requests=requests)


def _item_field(index: int, field: str | None) -> str:
    """The field of a refused batch item: ``inputs[3]``, ``inputs[3].email``,
    ``inputs[3].tenant``."""
    item = f"inputs[{index}]"
    if not field or field == "input":
        return item
    return item + (field[len("input") :] if field.startswith("input") else f".{field}")


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
