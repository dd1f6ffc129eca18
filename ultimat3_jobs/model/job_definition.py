"""A declared job as a value: :class:`JobDefinition`, its :class:`Retry` policy, and
:func:`check_declaration`, which refuses an option out of range, naming it. ``@job`` and
``@cron`` (:mod:`~ultimat3_jobs.model.definitions`) build them; the worker, the scheduler and the
``django.tasks`` backend read them.

Layer L3 (job model): imports L1, the cron schedules and the lease requests (the seam's
:class:`~ultimat3_jobs.drivers.leases_seam.LeaseRequest`, which a keyless limit asks for)."""

from __future__ import annotations

import inspect
import math
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.drivers.leases_seam import LeaseRequest
from ultimat3_jobs.errors import JobDeclarationInvalid
from ultimat3_jobs.model.cron import Schedule
from ultimat3_jobs.model.limits import (
    LIMIT_MAX,
    PER_SECONDS,
    Concurrency,
    Rate,
    count_ok,
    fixed_requests,
    lease_requests,
)
from ultimat3_jobs.model.signature import InputShape, shape_of
from ultimat3_jobs.types import (
    JOB_NAME_PATTERN,
    PRIORITY_DEFAULT,
    PRIORITY_MAX,
    PRIORITY_MIN,
    QUEUE_NAME_PATTERN,
)
from ultimat3_jobs.values import whole_number

MAX_ATTEMPTS_LIMIT = 1000
TIMEOUT_SECONDS_LIMIT = 7 * 86400.0

TenantRule = Callable[[Mapping[str, Any]], Any] | Literal["none"]
SettledHook = Callable[..., Any]


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


def refuse(job_name: str, option: str, rule: str, value: Any) -> JobDeclarationInvalid:
    return JobDeclarationInvalid(f"job {job_name!r}: {option} {rule}; got {value!r}")


def _finite(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


@dataclass(frozen=True, slots=True)
class Retry:
    """How a failed attempt is retried: up to ``attempts`` attempts in all, waiting
    ``backoff_base_seconds * 2 ** (attempt - 1)`` (at most ``backoff_cap_seconds``) between
    them, spread by ``jitter`` (a fraction of the wait, 0 to 1). ``None`` takes the setting's
    default (``DEFAULT_MAX_ATTEMPTS``, ``RETRY_BACKOFF_*``, ``RETRY_JITTER``)."""

    attempts: int | None = None
    backoff_base_seconds: float | None = None
    backoff_cap_seconds: float | None = None
    jitter: float | None = None

    def check(self, job_name: str) -> None:
        """Refuse a value that is not finite or out of range, naming the option."""
        a = self.attempts
        if a is not None and not whole_number(a, 1, MAX_ATTEMPTS_LIMIT):
            raise refuse(
                job_name, "retry.attempts", f"must be an integer from 1 to {MAX_ATTEMPTS_LIMIT}", a
            )
        for option, value, upper in (
            ("retry.backoff_base_seconds", self.backoff_base_seconds, 86400.0),
            ("retry.backoff_cap_seconds", self.backoff_cap_seconds, 30 * 86400.0),
            ("retry.jitter", self.jitter, 1.0),
        ):
            if value is not None and not (_finite(value) and 0 <= value <= upper):
                raise refuse(
                    job_name, option, f"must be a finite number from 0 to {upper:g}", value
                )
        base, cap = self.backoff_base_seconds, self.backoff_cap_seconds
        if base is not None and cap is not None and cap < base:
            raise refuse(
                job_name,
                "retry.backoff_cap_seconds",
                f"must be at least retry.backoff_base_seconds ({base:g})",
                cap,
            )

    def max_attempts(self) -> int:
        return self.attempts if self.attempts is not None else get_settings().default_max_attempts

    def delay_seconds(self, attempt: int, *, rng: random.Random | None = None) -> float:
        """The wait before the attempt after ``attempt`` (which counts from 1)."""
        settings = get_settings()
        base = (
            self.backoff_base_seconds
            if self.backoff_base_seconds is not None
            else settings.retry_backoff_base_seconds
        )
        cap = (
            self.backoff_cap_seconds
            if self.backoff_cap_seconds is not None
            else settings.retry_backoff_cap_seconds
        )
        jitter = self.jitter if self.jitter is not None else settings.retry_jitter
        wait = min(cap, base * 2.0 ** min(max(attempt, 1) - 1, 64))
        spread = wait * jitter
        return max(0.0, wait + (rng or random).uniform(-spread, spread))


@dataclass(frozen=True, slots=True, kw_only=True)
class JobDefinition:
    """A declared job: its body and its options, validated. Build it with :func:`job`."""

    name: str
    fn: Callable[..., Any]
    queue: str | None = None
    priority: int = PRIORITY_DEFAULT
    retry: Retry = field(default_factory=Retry)
    timeout_seconds: float | None = None
    lease_seconds: int | None = None
    tenant: TenantRule
    dead_letter: bool = True
    on_settled: SettledHook | None = None
    sensitive: frozenset[str] = frozenset()
    is_async: bool = False
    signature: inspect.Signature | None = None
    schedule: Schedule | None = None
    """Set for a cron job: the scheduler fires it on this cron schedule."""
    concurrency: Concurrency | None = None
    """At most this many runs at once (see :func:`resolve_concurrency`)."""
    rate: Rate | None = None
    """At most this many starts per period."""
    limited: bool = field(init=False, repr=False, compare=False)
    """Whether a run must hold leases before its body starts (``concurrency`` or ``rate``):
    worked out once, as the worker asks it of every job it claims, more than once."""
    input_shape: InputShape | None = field(init=False, repr=False, compare=False)
    """The names an input of the body's ``signature`` may and must have (``None``: no
    signature, or one only ``inspect.Signature.bind`` can judge): worked out once, as each
    run's input is checked against it."""
    fixed_leases: tuple[LeaseRequest, ...] | None = field(init=False, repr=False, compare=False)
    """The lease requests of every run when no limit has a key function (``None``: each run's
    input decides its keys): worked out once, as the worker asks them of every limited run."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "limited", self.concurrency is not None or self.rate is not None)
        shape = None if self.signature is None else shape_of(self.signature)
        object.__setattr__(self, "input_shape", shape)
        leases = fixed_requests(self.name, self.concurrency, self.rate)
        object.__setattr__(self, "fixed_leases", leases)

    def leases_for(self, input: Mapping[str, Any]) -> list[LeaseRequest]:
        """What a run with ``input`` must hold before its body starts
        (:func:`~ultimat3_jobs.model.limits.lease_requests`)."""
        fixed = self.fixed_leases
        if fixed is not None:
            return list(fixed)
        return lease_requests(self.name, self.concurrency, self.rate, input)

    @property
    def location(self) -> str:
        """Where the body is defined: ``module.qualname``."""
        return f"{self.fn.__module__}.{self.fn.__qualname__}"

    def resolved_queue(self) -> str:
        return self.queue if self.queue is not None else get_settings().default_queue

    def tenant_for(self, input: Mapping[str, Any]) -> str | None:
        """The tenant this job runs for, decided from its input; ``None`` for ``"none"``."""
        if self.tenant == "none":
            return None
        value = self.tenant(input)
        return None if value is None else str(value)


def check_declaration(definition: JobDefinition) -> None:
    """Refuse a definition whose options are not finite or out of range, naming the option."""
    name = definition.name
    if not re.fullmatch(JOB_NAME_PATTERN, name):
        raise refuse(name, "name", f"must match {JOB_NAME_PATTERN}", name)
    if definition.queue is not None and (
        not isinstance(definition.queue, str)
        or not re.fullmatch(QUEUE_NAME_PATTERN, definition.queue)
    ):
        raise refuse(name, "queue", f"must match {QUEUE_NAME_PATTERN}", definition.queue)
    p = definition.priority
    if not whole_number(p, PRIORITY_MIN, PRIORITY_MAX):
        raise refuse(
            name, "priority", f"must be an integer from {PRIORITY_MIN} to {PRIORITY_MAX}", p
        )
    if not isinstance(definition.retry, Retry):
        raise refuse(name, "retry", "must be a Retry(...)", definition.retry)
    definition.retry.check(name)
    t = definition.timeout_seconds
    if t is not None and not (_finite(t) and 0 < t <= TIMEOUT_SECONDS_LIMIT):
        raise refuse(
            name,
            "timeout",
            f"must be a finite number of seconds above 0 and at most {TIMEOUT_SECONDS_LIMIT:g}",
            t,
        )
    lease = definition.lease_seconds
    if lease is not None and not whole_number(lease, 1, 7 * 86400):
        raise refuse(name, "lease_seconds", "must be an integer from 1 to 604800", lease)
    if not (definition.tenant == "none" or callable(definition.tenant)):
        raise refuse(name, "tenant", 'must be "none" or a callable of the input', definition.tenant)
    if definition.schedule is not None and definition.tenant != "none":
        rule = 'must be "none" for a cron job: the scheduler fires it for no tenant'
        raise refuse(name, "tenant", rule, definition.tenant)
    if definition.on_settled is not None and not callable(definition.on_settled):
        raise refuse(name, "on_settled", "must be callable", definition.on_settled)


def resolve_concurrency(job_name: str, value: Any) -> Concurrency | None:
    """The declared ``concurrency`` (a count or a :class:`Concurrency`) resolved once, checked;
    ``None`` for none."""
    if value is None:
        return None
    if not isinstance(value, Concurrency):
        if not count_ok(value):
            rule = f"must be an integer from 1 to {LIMIT_MAX} or a Concurrency(...)"
            raise refuse(job_name, "concurrency", rule, value)
        return Concurrency(limit=value)
    if not count_ok(value.limit):
        rule = f"must be an integer from 1 to {LIMIT_MAX}"
        raise refuse(job_name, "concurrency.limit", rule, value.limit)
    if value.key is not None and not callable(value.key):
        raise refuse(job_name, "concurrency.key", "must be a function of the input", value.key)
    if value.when_busy not in ("wait", "fail"):
        raise refuse(job_name, "concurrency.when_busy", 'must be "wait" or "fail"', value.when_busy)
    return value


def resolve_rate(job_name: str, value: Any) -> Rate | None:
    """The declared ``rate``, checked; ``None`` for none."""
    if value is None:
        return None
    if not isinstance(value, Rate):
        raise refuse(job_name, "rate", "must be a Rate(count, per=...)", value)
    if not count_ok(value.count):
        rule = f"must be an integer from 1 to {LIMIT_MAX}"
        raise refuse(job_name, "rate.count", rule, value.count)
    if not isinstance(value.per, str) or value.per not in PER_SECONDS:
        raise refuse(job_name, "rate.per", 'must be "second", "minute" or "hour"', value.per)
    if value.key is not None and not callable(value.key):
        raise refuse(job_name, "rate.key", "must be a function of the input", value.key)
    return value
