"""``@job`` and ``@cron``: a function declared as a job, with its options validated once, at
declaration (by :mod:`~ultimat3_jobs.model.job_definition`, where :class:`JobDefinition` and
:class:`Retry` are defined; both still import from here).

Layer L3 (job model): imports L1, L2 and ``django.db.transaction``; never a concrete driver or the
models.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypedDict, Unpack, overload

from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.errors import JobDeclarationInvalid, JobTenantRequired
from ultimat3_jobs.model.cron import MAX_CATCH_UP_DEFAULT, CatchUp, Schedule
from ultimat3_jobs.model.enqueue import enqueue, enqueue_many
from ultimat3_jobs.model.job_definition import (
    UNSET,
    JobDefinition,
    Retry,
    SettledHook,
    TenantRule,
    check_declaration,
    refuse,
    resolve_concurrency,
    resolve_rate,
)
from ultimat3_jobs.model.limits import Concurrency, Rate
from ultimat3_jobs.model.options import RESOLVE, EnqueueOptions, options_from
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.types import (
    PRIORITY_DEFAULT,
    EnqueueResult,
    OnConflict,
    PublishMode,
)

if TYPE_CHECKING:
    from ultimat3_jobs.model.context import JobContext

__all__ = [
    "Concurrency",
    "CronJobOptions",
    "JobCall",
    "JobDefinition",
    "JobHandle",
    "JobOptions",
    "Rate",
    "Retry",
    "cron",
    "job",
    "task",
]


class CronJobOptions(TypedDict, total=False):
    """The options a job is declared with, each optional: ``@cron`` takes them beside its
    schedule, ``@job`` takes them and ``sensitive`` (:class:`JobOptions`). Defaults: ``name``
    the body's ``module.qualname``, ``queue`` ``DEFAULT_QUEUE``, ``priority`` 0, ``retry``
    ``Retry()``, ``timeout`` none, ``lease_seconds`` ``VISIBILITY_TIMEOUT_SECONDS``,
    ``tenant`` ``DEFAULT_TENANT``, ``dead_letter`` True, ``on_settled``, ``concurrency`` and
    ``rate`` none."""

    name: str | None
    queue: str | None
    priority: int
    retry: Retry | None
    timeout: float | timedelta | None
    lease_seconds: int | None
    tenant: TenantRule
    dead_letter: bool
    on_settled: SettledHook | None
    concurrency: int | Concurrency | None
    rate: Rate | None


class JobOptions(CronJobOptions, total=False):
    """``@job``'s options: :class:`CronJobOptions` and ``sensitive`` (input field names the
    operator surface redacts; none by default)."""

    sensitive: Iterable[str]


@overload
def job(fn: Callable[..., Any], /) -> JobHandle: ...


@overload
def job(
    fn: None = None, /, **options: Unpack[JobOptions]
) -> Callable[[Callable[..., Any]], JobHandle]: ...


def job(
    fn: Callable[..., Any] | None = None, /, **options: Unpack[JobOptions]
) -> JobHandle | Callable[[Callable[..., Any]], JobHandle]:
    """Declare a job. The body takes a :class:`~ultimat3_jobs.model.context.JobContext` first and
    its input as keyword arguments::

        @job(queue="emails", tenant="none", retry=Retry(attempts=5))
        def send_welcome(ctx, *, user_id: int) -> None: ...

        send_welcome.enqueue(user_id=42)

    The options (:class:`JobOptions`, all keyword-only): ``name`` defaults to
    ``module.qualname``; ``queue``, ``priority`` and ``retry`` (a :class:`Retry`) apply to every
    enqueue. ``tenant`` is required unless ``ULTIMAT3_JOBS['DEFAULT_TENANT']`` is ``"none"``.
    ``timeout`` bounds one attempt's run; ``lease_seconds`` overrides
    ``VISIBILITY_TIMEOUT_SECONDS`` for this job. ``dead_letter=False`` deletes a job that fails
    for good instead of keeping it ``failed``. ``sensitive`` names input fields the operator
    surface redacts. ``on_settled(ctx, outcome)`` runs once after the job ends for good.
    ``concurrency`` (a count or a :class:`~ultimat3_jobs.model.limits.Concurrency`) and ``rate``
    (a :class:`~ultimat3_jobs.model.limits.Rate`) limit its runs across every worker. Declaring
    registers the job; a duplicate name is refused.
    """
    declare = _declarer("job", options, JobOptions.__optional_keys__, schedule=None)
    if fn is not None:
        return declare(fn)
    return declare


def _declarer(
    caller: str, options: Mapping[str, Any], known: frozenset[str], *, schedule: Schedule | None
) -> Callable[[Callable[..., Any]], JobHandle]:
    """The decorator that declares a body with ``options`` (those of ``caller``, ``known``),
    each defaulting as :class:`CronJobOptions` says."""
    for key in options:
        if key not in known:
            raise TypeError(f"{caller}() got an unexpected keyword argument {key!r}")
    name: str | None = options.get("name")
    tenant: TenantRule = options.get("tenant", UNSET)
    timeout: float | timedelta | None = options.get("timeout")
    sensitive: Iterable[str] = options.get("sensitive", ())
    retry: Retry | None = options.get("retry")

    def declare(body: Callable[..., Any]) -> JobHandle:
        if not callable(body):
            raise JobDeclarationInvalid(f"@job must decorate a function; got {body!r}")
        if name is None and "<locals>" in getattr(body, "__qualname__", ""):
            raise JobDeclarationInvalid(
                f"job {body.__qualname__!r} is defined inside a function: declare jobs at "
                "module level (in an app's jobs.py) so every worker process declares them too, "
                "or give it an explicit name=..."
            )
        job_name = name or f"{body.__module__}.{body.__qualname__}"
        chosen_tenant = tenant
        if chosen_tenant is UNSET:
            if get_settings().default_tenant != "none":
                raise JobTenantRequired(
                    f'job {job_name!r} must declare its tenant: tenant="none" or '
                    "tenant=lambda input: input[...]; or set ULTIMAT3_JOBS['DEFAULT_TENANT'] "
                    '= "none" for a single-tenant project'
                )
            chosen_tenant = "none"
        timeout_seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
        fields = sensitive if isinstance(sensitive, str) else tuple(sensitive)
        if isinstance(fields, str) or not all(isinstance(f, str) for f in fields):
            raise refuse(job_name, "sensitive", "must be a list of input field names", sensitive)
        try:
            signature = inspect.signature(body)
        except (TypeError, ValueError):
            signature = None
        definition = JobDefinition(
            name=job_name,
            fn=body,
            queue=options.get("queue"),
            priority=options.get("priority", PRIORITY_DEFAULT),
            retry=retry if retry is not None else Retry(),
            timeout_seconds=timeout_seconds,
            lease_seconds=options.get("lease_seconds"),
            tenant=chosen_tenant,
            dead_letter=bool(options.get("dead_letter", True)),
            on_settled=options.get("on_settled"),
            sensitive=frozenset(fields),
            is_async=inspect.iscoroutinefunction(body),
            signature=signature,
            schedule=schedule,
            concurrency=resolve_concurrency(job_name, options.get("concurrency")),
            rate=resolve_rate(job_name, options.get("rate")),
        )
        check_declaration(definition)
        if schedule is not None:
            schedule.check(job_name)
        if signature is not None and not signature.parameters:
            raise refuse(
                job_name, "body", "must take the job context as its first parameter", str(signature)
            )
        handle = JobHandle(definition)
        registry.register(handle)
        return handle

    return declare


class JobCall:
    """A job with per-call options bound: ``handle.using(delay=60).enqueue(user_id=1)``."""

    __slots__ = ("handle", "options")

    def __init__(self, handle: JobHandle, options: EnqueueOptions) -> None:
        self.handle = handle
        self.options = options

    def using(self, **options: Any) -> JobCall:
        """These options with more set; see :meth:`JobHandle.using`."""
        merged = {key: getattr(self.options, key) for key in EnqueueOptions.__dataclass_fields__}
        merged.update(options)
        return JobCall(self.handle, options_from(merged))

    def enqueue(self, **input: Any) -> EnqueueResult:
        """Enqueue one job with this input; answers its id and ``created`` or ``deduped``."""
        return enqueue(self.handle.definition, input, self.options)

    def enqueue_many(self, inputs: Iterable[Mapping[str, Any]]) -> list[EnqueueResult]:
        """Enqueue one job per input, one write per 1,000; every refusal comes before the first
        write, and on PostgreSQL the writes of one call commit together or not at all. Answers
        in the order given."""
        return enqueue_many(self.handle.definition, inputs, self.options)


class JobHandle:
    """What ``@job`` answers: call it to run the body directly, or enqueue it."""

    def __init__(self, definition: JobDefinition) -> None:
        self.definition = definition
        self.__doc__ = definition.fn.__doc__
        self.__wrapped__ = definition.fn

    @property
    def name(self) -> str:
        return self.definition.name

    def __repr__(self) -> str:
        return f"<job {self.definition.name}>"

    def __call__(self, ctx: JobContext, /, **input: Any) -> Any:
        """Run the body here and now, outside any queue (for tests and scripts)."""
        return self.definition.fn(ctx, **input)

    def using(
        self,
        *,
        run_at: datetime | None = None,
        delay: float | timedelta | None = None,
        priority: int | None = None,
        queue: str | None = None,
        idempotency_key: str | None = None,
        on_conflict: OnConflict = "dedupe",
        enqueued_by: str | None = None,
        publish: PublishMode = "on-commit",
        traceparent: str | None = None,
        tenant: str | None = RESOLVE,
    ) -> JobCall:
        """Bind per-call options: ``run_at`` (an aware datetime) or ``delay`` (seconds or a
        timedelta), ``priority`` (-100..100, higher first), ``queue``, ``idempotency_key``
        (one live job per key), ``on_conflict`` (``"dedupe"`` answers the live job, ``"error"``
        raises :class:`~ultimat3_jobs.errors.JobDuplicate`), ``enqueued_by`` (attribution),
        ``publish``: ``"on-commit"`` (the default: inside ``transaction.atomic()`` the job
        exists if and only if the transaction commits), ``"now"`` (write to the job store at
        once, even inside a transaction) or ``"staged"`` (always through the outbox; refused
        outside a transaction); ``traceparent`` (a W3C trace context to carry instead of the
        active span's); ``tenant``: the enqueuer's tenant, instead of ``TENANT_RESOLVER``'s."""
        return JobCall(
            self,
            EnqueueOptions(
                run_at=run_at,
                delay=delay,
                priority=priority,
                queue=queue,
                idempotency_key=idempotency_key,
                on_conflict=on_conflict,
                enqueued_by=enqueued_by,
                publish=publish,
                traceparent=traceparent,
                tenant=tenant,
            ),
        )

    def enqueue(self, **input: Any) -> EnqueueResult:
        """Enqueue one job with this input and the job's own options."""
        return JobCall(self, EnqueueOptions()).enqueue(**input)

    def enqueue_many(self, inputs: Iterable[Mapping[str, Any]]) -> list[EnqueueResult]:
        """Enqueue one job per input; see :meth:`JobCall.enqueue_many`."""
        return JobCall(self, EnqueueOptions()).enqueue_many(inputs)

    def tenant_for(self, input: Mapping[str, Any]) -> str | None:
        return self.definition.tenant_for(input)


def cron(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    cron: str = UNSET,
    tz: str = UNSET,
    catch_up: CatchUp = "skip",
    max_catch_up: int = MAX_CATCH_UP_DEFAULT,
    **options: Unpack[CronJobOptions],
) -> Any:
    """Declare a cron job: a job the scheduler fires on ``cron`` in the time zone ``tz``
    (both required)::

        @cron(cron="0 3 * * *", tz="Europe/Paris", catch_up="run-once", tenant="none")
        def nightly_report(ctx) -> None: ...

    Every ``@job`` option but ``sensitive`` applies (:class:`CronJobOptions`). The body takes
    only the context. An occurrence fires once across any number of schedulers; ``catch_up``
    says what happens to occurrences missed while none ran (see
    :class:`~ultimat3_jobs.model.cron.Schedule`). A cron job can also be enqueued by hand like
    any job.
    """
    name = options.get("name")

    def require_schedule(body: Callable[..., Any]) -> None:
        if cron is UNSET or tz is UNSET:
            label = name or f"{body.__module__}.{body.__qualname__}"
            missing = " and ".join(n for n, v in (("cron", cron), ("tz", tz)) if v is UNSET)
            raise JobDeclarationInvalid(
                f"cron {label!r}: {missing} required (for example cron='0 3 * * *', "
                "tz='Europe/Paris')"
            )

    schedule = Schedule(cron=cron, tz=tz, catch_up=catch_up, max_catch_up=max_catch_up)
    declarer = _declarer("cron", options, CronJobOptions.__optional_keys__, schedule=schedule)

    def declare_cron(body: Callable[..., Any]) -> JobHandle:
        require_schedule(body)
        handle = declarer(body)
        signature = handle.definition.signature
        if signature is not None:
            try:
                signature.bind(None)
            except TypeError:
                registry.unregister(handle.name)
                raise JobDeclarationInvalid(
                    f"cron {handle.name!r}: its body must take only the job context (a fired "
                    f"cron job has no input); got {signature}"
                ) from None
        return handle

    if fn is not None:
        return declare_cron(fn)
    return declare_cron


def task(*args: Any, **kwargs: Any) -> Any:
    """Deprecated alias of :func:`cron` ("task" now means a ``django.tasks`` task only)."""
    warnings.warn(
        "@task is deprecated: use @cron (from ultimat3_jobs import cron)",
        DeprecationWarning,
        stacklevel=2,
    )
    return cron(*args, **kwargs)
