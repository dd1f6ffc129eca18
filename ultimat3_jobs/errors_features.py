"""The errors of the features built on jobs: webhooks, consumers, subject requests.

Layer L1 (core): imports only ``errors_base``. Every class here is re-exported by
:mod:`ultimat3_jobs.errors` (import them from there) and listed on the errors page.
"""

from __future__ import annotations

from ultimat3_jobs.errors_base import CodedOutcome, JobsError, Terminal

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
