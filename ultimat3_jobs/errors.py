"""Every refusal ultimat3-jobs raises, each with a stable ``X_*`` code.

Layer L1 (core): imports the standard library and ``django.core.exceptions`` only.

The tree of these classes, with each one's code and built-in base, is on the errors page,
``docs/reference/errors.md`` ("The tree"); a test holds the page to these classes.

Recorded, never raised: LeaseExpired (``ultimat3_jobs.LeaseExpired``), the error class of an
attempt whose worker was lost before it settled; SettleRefused (``ultimat3_jobs.SettleRefused``),
of an attempt whose result or error the database refused to store; Cancelled
(``ultimat3_jobs.Cancelled``), the entry an operator's cancel leaves with its reason.

The roots live in ``errors_base``, the features' errors (webhooks, consumers, subject requests)
in ``errors_features``; this module re-exports them, so import every error from here.

Each class's docstring is its default message; the errors page also lists every code, and a test
keeps its list and its tree in step with this module.
"""

from __future__ import annotations

import uuid

from django.core.exceptions import ImproperlyConfigured

from ultimat3_jobs.errors_base import JobsError, Terminal
from ultimat3_jobs.errors_features import (  # noqa: F401  (re-exported: import them from here)
    BackfillCompleted,
    BackfillEnvironment,
    BackfillError,
    BackfillInvalid,
    BackfillStalled,
    ConsumerInvalid,
    ConsumerSelfEnqueue,
    ConsumerUnknown,
    ImportErrorsExceeded,
    ImportInvalid,
    ImportRecordInvalid,
    StorageUnknown,
    SubjectFieldUnknown,
    SubjectRequestInvalid,
    SubjectTableInvalid,
    SubjectTableUnknown,
    WebhookBodyTooLarge,
    WebhookDeliveryFailed,
    WebhookDestinationRefused,
    WebhookEndpointDisabled,
    WebhookEndpointInvalid,
    WebhookEndpointNotFound,
    WebhookEventIdInvalid,
    WebhookPayloadInvalid,
    WebhookSignatureInvalid,
)


class JobsConfigurationError(JobsError, ImproperlyConfigured, code="X_CONFIG_INVALID"):
    """The ULTIMAT3_JOBS setting is invalid."""


class JobDeclarationInvalid(JobsError, ValueError, code="X_JOB_DECLARATION_INVALID"):
    """A @job or @cron declaration is invalid."""


class JobNameDuplicate(JobDeclarationInvalid, code="X_JOB_NAME_DUPLICATE"):
    """Two jobs were declared with the same name."""


class JobTenantRequired(JobDeclarationInvalid, code="X_JOB_TENANT_REQUIRED"):
    """A job must declare its tenant: tenant="none" or a callable of the input."""


class EnqueueRefused(
    JobsError, ValueError, code="X_ENQUEUE_REFUSED", fields={"field": None, "rule": None}
):
    """The enqueue was refused and nothing was written."""

    field: str | None
    rule: str | None


class JobInputInvalid(EnqueueRefused, code="X_JOB_INPUT_INVALID"):
    """The job's input is not valid JSON for a job."""


class JobQueueInvalid(EnqueueRefused, code="X_JOB_QUEUE_INVALID"):
    """The queue name is invalid."""


class JobPriorityInvalid(EnqueueRefused, code="X_JOB_PRIORITY_INVALID"):
    """The priority is out of range."""


class JobRunAtInvalid(EnqueueRefused, code="X_JOB_RUN_AT_INVALID"):
    """The run time is invalid."""


class JobOptionInvalid(EnqueueRefused, code="X_JOB_OPTION_INVALID"):
    """An enqueue option is invalid."""


class JobUnknown(EnqueueRefused, LookupError, code="X_JOB_UNKNOWN"):
    """No job is declared under that name."""


class JobDuplicate(JobsError, code="X_JOB_DUPLICATE", fields={"existing_id": None}):
    """A live job with the same name and idempotency key exists."""

    existing_id: uuid.UUID | None


class JobNotFound(JobsError, LookupError, code="X_JOB_NOT_FOUND"):
    """No job has that id."""


class JobNotRequeueable(JobsError, code="X_JOB_NOT_REQUEUEABLE"):
    """Only a finished job (completed, failed or cancelled) can be requeued."""


class JobNotCancellable(JobsError, code="X_JOB_NOT_CANCELLABLE"):
    """Only a live job (queued or running) can be cancelled."""


class JobNotPromotable(JobsError, code="X_JOB_NOT_PROMOTABLE"):
    """Only a queued job can be made due now."""


class JobNotRemovable(JobsError, code="X_JOB_NOT_REMOVABLE"):
    """A running job cannot be removed; cancel it first."""


class CancelReasonInvalid(JobsError, ValueError, code="X_CANCEL_REASON_INVALID"):
    """A cancel reason must be text of at most 1,000 characters, without NUL."""


class JobAborted(JobsError, code="X_ABORTED"):
    """This job's attempt was cancelled: its body may write nothing more (no enqueue)."""


class JobLeaseLost(JobsError, code="X_JOB_LEASE_LOST"):
    """This attempt no longer holds its job (rescued, cancelled or settled elsewhere): a step
    write was refused and nothing was written."""


class ConcurrencyUnenforceable(JobsError, code="X_JOB_CONCURRENCY_UNENFORCEABLE"):
    """A job declares a concurrency or rate limit and the driver keeps no leases to enforce it."""


class ConcurrencyKeyInvalid(JobsError, ValueError, code="X_JOB_CONCURRENCY_KEY_INVALID"):
    """A job's concurrency or rate key function answered something other than a short string."""


class LeaseKeyInvalid(JobsError, ValueError, code="X_LEASE_KEY_INVALID"):
    """An operator named a lease key that is not a concurrency key as the store writes them."""


class StepError(JobsError, code="X_STEP"):
    """A durable step was refused. Fails the job at once: a replay would meet it again."""


class StepInvalid(StepError, ValueError, code="X_STEP_INVALID"):
    """A step's name, result, duration or wake time breaks a rule; nothing was written."""


class StepMismatch(StepError, code="X_STEP_MISMATCH"):
    """A step's stored record does not match what the body asks of it now (another kind of step,
    another event or key): the body was changed while the job was running."""


class StepOnceInterrupted(StepError, code="X_STEP_ONCE_INTERRUPTED"):
    """A ``once`` step was started and never recorded done: it may have run, so it is never run
    a second time and the job fails."""


class EventInvalid(JobsError, ValueError, code="X_EVENT_INVALID"):
    """An event's name, key, payload or time to live breaks a rule; nothing was sent."""


class JobPageInvalid(JobsError, ValueError, code="X_JOB_PAGE_INVALID"):
    """The job list request is invalid (page size, cursor or filter)."""


class JobClaimQueuesEmpty(JobsError, ValueError, code="X_JOB_CLAIM_QUEUES_EMPTY"):
    """A claim must name at least one queue."""


class PauseInvalid(JobsError, ValueError, code="X_PAUSE_INVALID"):
    """A pause must name a scope (queue, job or task) and a non-empty target."""


class OutboxNoTransaction(JobsError, code="X_OUTBOX_NO_TRANSACTION"):
    """A staged enqueue needs a transaction to hold it, and none is open."""


class DriverUnavailable(JobsError, code="X_DRIVER_UNAVAILABLE"):
    """The job store cannot be reached."""


class DriverCapabilityMissing(JobsError, code="X_DRIVER_CAPABILITY_MISSING"):
    """The configured job store does not provide this capability (its driver says so with a
    ``has_*`` flag): use a driver that does, or leave the feature off."""


class StoreRefused(JobsError, code="X_STORE_REFUSED", fields={"reason": "", "sqlstate": None}):
    """The job store refused the data of a write (a value it cannot hold, a constraint).

    ``reason`` is what the store said in one line (for PostgreSQL, the error's class and
    primary message) and ``sqlstate`` its SQLSTATE, if any: never the DETAIL or CONTEXT lines,
    which can quote the whole row (a job's input and result). Retried as it is, the same write
    is refused again.
    """

    reason: str
    sqlstate: str | None

    def __init__(
        self, message: str | None = None, *, reason: str = "", sqlstate: str | None = None
    ) -> None:
        if message is None and reason:
            told = f"{reason} (SQLSTATE {sqlstate})" if sqlstate else reason
            message = f"the job store refused the write: {told}"
        super().__init__(message, reason=reason, sqlstate=sqlstate)


class InvariantViolated(JobsError, code="X_INVARIANT"):
    """An internal rule of ultimat3-jobs was broken; please report it."""


class JobTenantMismatch(EnqueueRefused, Terminal, code="X_JOB_TENANT_MISMATCH"):
    """A job's input names another tenant than the one it is enqueued by or runs for (or than
    its target's). Refused at enqueue (nothing is written); raised by a body, terminal."""


class LeaseExpired(Exception):
    """The lease of an attempt expired before it settled: its worker was lost."""


class SettleRefused(Exception):
    """The database refused to store how an attempt ended (its result or its error entry)."""


def all_error_classes() -> list[type[JobsError] | type[Terminal]]:
    """Every error class of this module (those it re-exports included), refusals first."""
    found: list[type[JobsError] | type[Terminal]] = []
    for value in globals().values():
        if isinstance(value, type) and issubclass(value, (JobsError, Terminal)):
            found.append(value)
    return sorted(found, key=lambda cls: issubclass(cls, Terminal))
