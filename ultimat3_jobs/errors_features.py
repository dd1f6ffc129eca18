"""The errors of the features built on jobs: the factories (backfills, storage, imports),
webhooks, consumers, subject requests.

Layer L1 (core): imports only ``errors_base``. Every class here is re-exported by
:mod:`ultimat3_jobs.errors` (import them from there) and listed on the errors page.
"""

from __future__ import annotations

from ultimat3_jobs.errors_base import CodedOutcome, JobsError, Terminal

# -- factories: backfills, storage, imports ------------------------------------------------------


class BackfillError(JobsError):
    """A backfill was refused (``ultimat3_jobs.factories.backfill``)."""

    code = "X_BACKFILL"


class BackfillInvalid(BackfillError, ValueError):
    """A backfill declaration breaks a rule (its source, its ordering key, its batch size)."""

    code = "X_BACKFILL_INVALID"


class BackfillStalled(BackfillError):
    """A backfill's cursor stopped moving, or rows were still to do after its last batch."""

    code = "X_BACKFILL_STALLED"


class BackfillCompleted(BackfillError):
    """The backfill already has a completed run for this scope: it is never run again."""

    code = "X_BACKFILL_COMPLETED"


class BackfillEnvironment(BackfillError):
    """The backfill is not declared for this environment."""

    code = "X_BACKFILL_ENVIRONMENT"


class StorageUnknown(JobsError, LookupError):
    """An export or import names a storage that ``settings.STORAGES`` does not define."""

    code = "X_STORAGE_UNKNOWN"


class ImportInvalid(JobsError, ValueError):
    """An ``import_rows`` or ``export_rows`` declaration breaks a rule."""

    code = "X_IMPORT_INVALID"


class ImportRecordInvalid(JobsError, ValueError):
    """One imported record was refused: raised by a ``parse`` with the ``field`` and the
    ``rule`` it broke. The report keeps the row number, the field and the rule, never the
    value."""

    code = "X_IMPORT_RECORD_INVALID"

    def __init__(self, message: str | None = None, *, field: str = "", rule: str = "") -> None:
        super().__init__(message, field=field, rule=rule)
        self.field = field
        self.rule = rule


class ImportErrorsExceeded(JobsError):
    """An import refused more records than its error budget allows."""

    code = "X_IMPORT_ERRORS_EXCEEDED"


# -- webhooks ----------------------------------------------------------------------------------


class WebhookEndpointInvalid(JobsError, ValueError):
    """A webhook endpoint's name, URL, tenant or secret breaks its rule."""

    code = "X_WEBHOOK_ENDPOINT_INVALID"


class WebhookEndpointNotFound(JobsError, LookupError):
    """No webhook endpoint has this name."""

    code = "X_WEBHOOK_ENDPOINT_NOT_FOUND"


class WebhookDeliveryFailed(JobsError):
    """A webhook endpoint did not answer 2xx (or could not be reached); the attempt is retried."""

    code = "X_WEBHOOK_DELIVERY_FAILED"


class WebhookSignatureInvalid(JobsError):
    """A received webhook's signature is missing, wrong or stale (answered 401)."""

    code = "X_WEBHOOK_SIGNATURE_INVALID"


class WebhookBodyTooLarge(JobsError):
    """A received webhook's body is larger than its receiver's max_bytes (answered 413)."""

    code = "X_WEBHOOK_BODY_TOO_LARGE"


class WebhookEventIdInvalid(JobsError, ValueError):
    """A received webhook's event id is missing or breaks the id pattern (answered 422)."""

    code = "X_WEBHOOK_EVENT_ID_INVALID"


class WebhookPayloadInvalid(JobsError, ValueError):
    """A received webhook's verified body is not the JSON its receiver reads (answered 400)."""

    code = "X_WEBHOOK_PAYLOAD_INVALID"


class WebhookEndpointDisabled(CodedOutcome, Terminal):
    """The webhook endpoint is disabled: no request was sent."""

    code = "X_WEBHOOK_ENDPOINT_DISABLED"


class WebhookDestinationRefused(CodedOutcome, Terminal):
    """A webhook URL resolves to an address deliveries may not reach (loopback, private,
    link-local, metadata) and WEBHOOK_ALLOWED_NETWORKS does not allow it: no request was sent."""

    code = "X_WEBHOOK_DESTINATION_REFUSED"


# -- consumers ---------------------------------------------------------------------------------


class ConsumerInvalid(JobsError, ValueError):
    """A consumer's declaration breaks a rule (its name, source, handle or batch size), or its
    source answered a cursor that does not move forward."""

    code = "X_CONSUMER_INVALID"


class ConsumerSelfEnqueue(JobsError, ValueError):
    """A consumer's handle tried to enqueue the consumer itself (or its supervisor): refused, so
    that a consumer cannot feed itself. Nothing was written."""

    code = "X_CONSUMER_SELF_ENQUEUE"


class ConsumerUnknown(JobsError, LookupError):
    """No consumer is declared under this name."""

    code = "X_CONSUMER_UNKNOWN"


# -- subject requests --------------------------------------------------------------------------


class SubjectFieldUnknown(JobsError, ValueError):
    """A subject table's field is not a concrete field of its model."""

    code = "X_SUBJECT_FIELD_UNKNOWN"


class SubjectTableInvalid(JobsError, ValueError):
    """A subject table's registration breaks a rule (its model, erase mode, anonymized values,
    page size), or erasing it would reach a table that is not registered."""

    code = "X_SUBJECT_TABLE_INVALID"


class SubjectRequestInvalid(JobsError, ValueError):
    """A subject export or erase request is refused: its subject id, requester or storage breaks
    a rule, or no table is registered. Nothing was written."""

    code = "X_SUBJECT_REQUEST_INVALID"


class SubjectTableUnknown(CodedOutcome, Terminal):
    """A subject request's plan names a table that is no longer registered: the request fails at
    once and reaches no other table."""

    code = "X_SUBJECT_TABLE_UNKNOWN"


# Known by their place in ``ultimat3_jobs.errors`` (the recorded ``error_class`` of a failed
# attempt, a pickled error), which re-exports them.
for _cls in list(globals().values()):
    if isinstance(_cls, type) and _cls.__module__ == __name__:
        _cls.__module__ = "ultimat3_jobs.errors"
