"""The errors of the features built on jobs: the factories (backfills, storage, imports),
webhooks, consumers, subject requests.

Layer L1 (core): imports only ``errors_base``. Every class here is re-exported by
:mod:`ultimat3_jobs.errors` (import them from there) and listed on the errors page.
"""

from __future__ import annotations

from ultimat3_jobs.errors_base import CodedOutcome, JobsError, Terminal

# -- factories: backfills, storage, imports ------------------------------------------------------


class BackfillError(JobsError, code="X_BACKFILL"):
    """A backfill was refused (``ultimat3_jobs.factories.backfill``)."""


class BackfillInvalid(BackfillError, ValueError, code="X_BACKFILL_INVALID"):
    """A backfill declaration breaks a rule (its source, its ordering key, its batch size)."""


class BackfillStalled(BackfillError, code="X_BACKFILL_STALLED"):
    """A backfill's cursor stopped moving, or rows were still to do after its last batch."""


class BackfillCompleted(BackfillError, code="X_BACKFILL_COMPLETED"):
    """The backfill already has a completed run for this scope: it is never run again."""


class BackfillEnvironment(BackfillError, code="X_BACKFILL_ENVIRONMENT"):
    """The backfill is not declared for this environment."""


class StorageUnknown(JobsError, LookupError, code="X_STORAGE_UNKNOWN"):
    """An export or import names a storage that ``settings.STORAGES`` does not define."""


class ImportInvalid(JobsError, ValueError, code="X_IMPORT_INVALID"):
    """An ``import_rows`` or ``export_rows`` declaration breaks a rule."""


class ImportRecordInvalid(
    JobsError, ValueError, code="X_IMPORT_RECORD_INVALID", fields={"field": "", "rule": ""}
):
    """One imported record was refused: raised by a ``parse`` with the ``field`` and the
    ``rule`` it broke. The report keeps the row number, the field and the rule, never the
    value."""

    field: str
    rule: str


class ImportErrorsExceeded(JobsError, code="X_IMPORT_ERRORS_EXCEEDED"):
    """An import refused more records than its error budget allows."""


# -- webhooks ----------------------------------------------------------------------------------


class WebhookEndpointInvalid(JobsError, ValueError, code="X_WEBHOOK_ENDPOINT_INVALID"):
    """A webhook endpoint's name, URL, tenant or secret breaks its rule."""


class WebhookEndpointNotFound(JobsError, LookupError, code="X_WEBHOOK_ENDPOINT_NOT_FOUND"):
    """No webhook endpoint has this name."""


class WebhookDeliveryFailed(JobsError, code="X_WEBHOOK_DELIVERY_FAILED"):
    """A webhook endpoint did not answer 2xx (or could not be reached); the attempt is retried."""


class WebhookSignatureInvalid(JobsError, code="X_WEBHOOK_SIGNATURE_INVALID"):
    """A received webhook's signature is missing, wrong or stale (answered 401)."""


class WebhookBodyTooLarge(JobsError, code="X_WEBHOOK_BODY_TOO_LARGE"):
    """A received webhook's body is larger than its receiver's max_bytes (answered 413)."""


class WebhookEventIdInvalid(JobsError, ValueError, code="X_WEBHOOK_EVENT_ID_INVALID"):
    """A received webhook's event id is missing or breaks the id pattern (answered 422)."""


class WebhookPayloadInvalid(JobsError, ValueError, code="X_WEBHOOK_PAYLOAD_INVALID"):
    """A received webhook's verified body is not the JSON its receiver reads (answered 400)."""


class WebhookEndpointDisabled(CodedOutcome, Terminal, code="X_WEBHOOK_ENDPOINT_DISABLED"):
    """The webhook endpoint is disabled: no request was sent."""


class WebhookDestinationRefused(CodedOutcome, Terminal, code="X_WEBHOOK_DESTINATION_REFUSED"):
    """A webhook URL resolves to an address deliveries may not reach (loopback, private,
    link-local, metadata) and WEBHOOK_ALLOWED_NETWORKS does not allow it: no request was sent."""


# -- consumers ---------------------------------------------------------------------------------


class ConsumerInvalid(JobsError, ValueError, code="X_CONSUMER_INVALID"):
    """A consumer's declaration breaks a rule (its name, source, handle or batch size), or its
    source answered a cursor that does not move forward."""


class ConsumerSelfEnqueue(JobsError, ValueError, code="X_CONSUMER_SELF_ENQUEUE"):
    """A consumer's handle tried to enqueue the consumer itself (or its supervisor): refused, so
    that a consumer cannot feed itself. Nothing was written."""


class ConsumerUnknown(JobsError, LookupError, code="X_CONSUMER_UNKNOWN"):
    """No consumer is declared under this name."""


# -- subject requests --------------------------------------------------------------------------


class SubjectFieldUnknown(JobsError, ValueError, code="X_SUBJECT_FIELD_UNKNOWN"):
    """A subject table's field is not a concrete field of its model."""


class SubjectTableInvalid(JobsError, ValueError, code="X_SUBJECT_TABLE_INVALID"):
    """A subject table's registration breaks a rule (its model, erase mode, anonymized values,
    page size), or erasing it would reach a table that is not registered."""


class SubjectRequestInvalid(JobsError, ValueError, code="X_SUBJECT_REQUEST_INVALID"):
    """A subject export or erase request is refused: its subject id, requester or storage breaks
    a rule, or no table is registered. Nothing was written."""


class SubjectTableUnknown(CodedOutcome, Terminal, code="X_SUBJECT_TABLE_UNKNOWN"):
    """A subject request's plan names a table that is no longer registered: the request fails at
    once and reaches no other table."""


# Known by their place in ``ultimat3_jobs.errors`` (the recorded ``error_class`` of a failed
# attempt, a pickled error), which re-exports them.
for _cls in list(globals().values()):
    if isinstance(_cls, type) and _cls.__module__ == __name__:
        _cls.__module__ = "ultimat3_jobs.errors"
