"""``JobContext``: what a job's body gets as its first argument.

Layer L3 (job model).
"""

from __future__ import annotations

import contextvars
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ultimat3_jobs.errors import JobAborted
from ultimat3_jobs.model.step_api import AsyncSteps, Steps
from ultimat3_jobs.types import ClaimedJob

logger = logging.getLogger("ultimat3_jobs.job")

_scope: contextvars.ContextVar[tuple[str | None, JobContext | None]] = contextvars.ContextVar(
    "ultimat3_jobs_scope", default=(None, None)
)
"""The tenant and the job's context the code runs for, in one variable: the worker installs
both around every body, and each variable set (and reset) costs a new context mapping."""


class CancelEvent(threading.Event):
    """A :class:`threading.Event` whose lock and condition are made when first needed (a
    ``set``, ``wait`` or ``clear``): every attempt gets one as ``ctx.cancelled``, and most are
    only ever asked ``is_set()``, or nothing. Building the condition at once cost a no-op
    job's worker more CPU than its body."""

    def __init__(self) -> None:  # no super().__init__(): ``_cond`` comes in ``__getattr__``
        self._flag = False

    def __getattr__(self, name: str) -> Any:
        if name != "_cond":
            raise AttributeError(name)
        with _cancel_conditions:
            cond = self.__dict__.get("_cond")
            if cond is None:
                cond = self.__dict__["_cond"] = threading.Condition(threading.Lock())
        return cond


_cancel_conditions = threading.Lock()
"""Makes each :class:`CancelEvent`'s condition once, whichever threads ask for it first."""

_new = object.__new__


def current_tenant() -> str | None:
    """The tenant of the scope this code runs in, or ``None``: a job's run tenant (the worker
    installs it around the body and ``on_settled``; ``None`` for a job declared
    ``tenant="none"``), a request's under ``TenantMiddleware``, or what
    :func:`~ultimat3_jobs.model.tenancy.tenant_scope` installed."""
    return _scope.get()[0]


def current_job() -> JobContext | None:
    """The context of the job whose body runs here (this thread, or this asyncio task), or
    ``None`` outside a job's body."""
    return _scope.get()[1]


install_scope = _scope.set
"""Install ``(tenant, job context)`` for the current context (answers a token); undo with
:func:`uninstall_scope`. The variable's own methods, not functions around them: the worker
installs a tenant and a job around every body."""
uninstall_scope = _scope.reset


def install_job(ctx: JobContext) -> contextvars.Token[tuple[str | None, JobContext | None]]:
    """Mark the current context as running a job's body (its ``JobContext``), the tenant kept
    (answers a token); undo with :func:`uninstall_job`."""
    return _scope.set((_scope.get()[0], ctx))


uninstall_job = _scope.reset


def refuse_if_aborted() -> None:
    """Raise :class:`~ultimat3_jobs.errors.JobAborted` when called from the body of a job whose
    attempt was cancelled (by an operator, a lost lease, its timeout, or a release at
    shutdown): such a body may write nothing more. Outside a job's body it does nothing."""
    ctx = _scope.get()[1]
    if ctx is not None and ctx.cancelled.is_set():
        raise JobAborted(
            f"job {ctx.name} {ctx.job_id} (attempt {ctx.attempt}) was cancelled; its body "
            "may not enqueue: nothing was written"
        )


@dataclass(slots=True, kw_only=True)
class JobContext:
    """One attempt of one job, as its body sees it.

    ``cancelled`` is set when the attempt must stop (cancelled by an operator, timed out, lease
    lost, worker shutting down); a long body polls ``cancelled.is_set()`` or waits on it.
    ``progress(...)`` reports how far the body got; the worker throttles and stores it.
    ``traceparent`` is the W3C trace context stamped when the job was enqueued, or ``None``.
    ``step`` holds the durable steps (``ctx.step.run(...)``, ``sleep``, ``wait_for_event``; see
    :mod:`ultimat3_jobs.model.step_api`): bound to the store by the worker (on the body's first
    use of ``ctx.step``: most bodies never touch it), they store nothing in a direct call.
    """

    job_id: uuid.UUID
    name: str
    attempt: int = 1
    max_attempts: int = 1
    queue: str = "default"
    tenant_id: str | None = None
    traceparent: str | None = None
    cancelled: threading.Event = field(default_factory=CancelEvent)
    _on_progress: Callable[[Any], None] | None = None
    _step: Steps | AsyncSteps | None = field(default=None, init=False, repr=False, compare=False)
    _bind_step: Callable[[JobContext], Steps | AsyncSteps] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    """Builds ``step`` from this context on first use (set by the worker's ``bind_steps``);
    handed the context, never holding it: a reference cycle would wait for the collector."""
    _logger: logging.LoggerAdapter[logging.Logger] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def step(self) -> Steps | AsyncSteps:
        if self._step is None:
            bind, self._bind_step = self._bind_step, None
            self._step = bind(self) if bind is not None else Steps()
        return self._step

    @step.setter
    def step(self, steps: Steps | AsyncSteps) -> None:
        self._step, self._bind_step = steps, None

    @property
    def logger(self) -> logging.LoggerAdapter[logging.Logger]:
        """A logger that tags each record with the job's id, name and attempt (made on first
        use: most bodies never log through it)."""
        if self._logger is None:
            self._logger = logging.LoggerAdapter(
                logger,
                {"job_id": str(self.job_id), "job_name": self.name, "attempt": self.attempt},
            )
        return self._logger

    def progress(
        self, current: float | None = None, total: float | None = None, **extra: Any
    ) -> None:
        """Report progress, e.g. ``ctx.progress(40, 100, stage="upload")``. Outside a worker
        (a direct call of the job) it is only logged."""
        value: dict[str, Any] = {"current": current, "total": total, **extra}
        if self._on_progress is not None:
            self._on_progress(value)
        else:
            self.logger.debug("progress %s", value)

    @classmethod
    def for_direct_call(cls, name: str, **fields: Any) -> JobContext:
        """A context for running a body outside the queue (tests, scripts)."""
        return cls(job_id=uuid.uuid4(), name=name, **fields)

    @classmethod
    def for_claimed(cls, job: ClaimedJob, *, tenant_id: str | None) -> JobContext:
        """The context of an attempt of a claimed job, as the worker (and ``run_enqueued``)
        hand it to the body, for the run's tenant ``tenant_id``. Its slots are set one by one,
        every field as the generated ``__init__`` sets it (the worker builds one per job, and
        matching seven keywords cost more than the stores)."""
        ctx = _new(cls)
        ctx.job_id = job.id
        ctx.name = job.name
        ctx.attempt = job.attempt
        ctx.max_attempts = job.max_attempts
        ctx.queue = job.queue
        ctx.tenant_id = tenant_id
        ctx.traceparent = job.traceparent
        ctx.cancelled = CancelEvent()
        ctx._on_progress = ctx._step = ctx._bind_step = ctx._logger = None
        return ctx
