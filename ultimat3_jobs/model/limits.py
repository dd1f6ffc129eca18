"""A job's limits as declared: :class:`Concurrency` (a fleet-wide cap, optionally per key) and
:class:`Rate` (at most ``count`` starts per period, optionally per key), resolved and checked once
at declaration (``resolve_concurrency`` and ``resolve_rate`` in ``job_definition.py``), and the
lease requests a claimed job's run must hold (:func:`lease_requests`, asked through
``JobDefinition.leases_for``).

Lease keys: ``job:<name>`` for a cap on the job name, ``job-key:<name>:<key>`` for a cap per key;
``rate:<name>`` and ``rate-key:<name>:<key>`` for rates. The name and the key are quoted (``%``
and ``:`` percent-encoded), so no key can spell another name's lease.

Layer L3 (job model): imports L1 and the seam.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ultimat3_jobs.drivers.leases_seam import LeaseRequest
from ultimat3_jobs.errors import ConcurrencyKeyInvalid

WhenBusy = Literal["wait", "fail"]
Per = Literal["second", "minute", "hour"]
PER_SECONDS: dict[str, float] = {"second": 1.0, "minute": 60.0, "hour": 3600.0}
LIMIT_MAX = 10_000
KEY_MAX_LENGTH = 200

KeyFunction = Callable[[Mapping[str, Any]], Any]


@dataclass(frozen=True, slots=True)
class Concurrency:
    """At most ``limit`` runs at once across every worker: of the job, or, with ``key`` (a
    function of the input answering a short string), of each key. ``when_busy``: ``"wait"``
    puts a run that finds no free slot back in the queue for a little while; ``"fail"`` fails
    it for good (outcome ``refused``) when another live run holds the key."""

    limit: int
    key: KeyFunction | None = None
    when_busy: WhenBusy = "wait"


@dataclass(frozen=True, slots=True)
class Rate:
    """At most ``count`` runs start per ``per`` (``"second"``, ``"minute"``, ``"hour"``)
    across every worker, in any window of that length: of the job, or, with ``key``, of each
    key. A run over the rate waits in the queue until a start is free."""

    count: int
    per: Per = "second"
    key: KeyFunction | None = None

    @property
    def period_seconds(self) -> float:
        return PER_SECONDS[self.per]


def count_ok(value: Any) -> bool:
    """An integer (never a bool, never a float, however whole) from 1 to :data:`LIMIT_MAX`."""
    return not isinstance(value, bool) and isinstance(value, int) and 1 <= value <= LIMIT_MAX


def quote(text: str) -> str:
    """``text`` with ``%`` and ``:`` percent-encoded: a part of a lease key that cannot end it."""
    return text.replace("%", "%25").replace(":", "%3A")


def _key_of(job_name: str, option: str, key: KeyFunction, input: Mapping[str, Any]) -> str:
    try:
        value = key(input)
    except Exception as exc:
        raise ConcurrencyKeyInvalid(
            f"job {job_name!r}: {option} raised {type(exc).__name__}: {exc}",
            field=option,
            rule="key-function",
        ) from exc
    if not isinstance(value, str) or not 1 <= len(value) <= KEY_MAX_LENGTH:
        raise ConcurrencyKeyInvalid(
            f"job {job_name!r}: {option} must answer a string of 1 to {KEY_MAX_LENGTH} "
            f"characters; got {type(value).__name__} {str(value)[:80]!r}",
            field=option,
            rule="short-string",
        )
    return value


def concurrency_key(job_name: str, concurrency: Concurrency, input: Mapping[str, Any]) -> str:
    """The lease key of a run of ``job_name`` with ``input``."""
    if concurrency.key is None:
        return f"job:{quote(job_name)}"
    key = _key_of(job_name, "concurrency.key", concurrency.key, input)
    return f"job-key:{quote(job_name)}:{quote(key)}"


def rate_key(job_name: str, rate: Rate, input: Mapping[str, Any]) -> str:
    """The rate key of a run of ``job_name`` with ``input``."""
    if rate.key is None:
        return f"rate:{quote(job_name)}"
    key = _key_of(job_name, "rate.key", rate.key, input)
    return f"rate-key:{quote(job_name)}:{quote(key)}"


def lease_requests(
    job_name: str,
    concurrency: Concurrency | None,
    rate: Rate | None,
    input: Mapping[str, Any],
) -> list[LeaseRequest]:
    """What a run must hold before its body starts, in the order to take it: the concurrency
    slot first, so that a rate stamp is spent only by a run that can start. Raises
    :class:`~ultimat3_jobs.errors.ConcurrencyKeyInvalid` for a key function's bad answer.
    Limits without a key function ask the same of every run: :func:`fixed_requests`."""
    requests: list[LeaseRequest] = []
    if concurrency is not None:
        requests.append(
            LeaseRequest(key=concurrency_key(job_name, concurrency, input), limit=concurrency.limit)
        )
    if rate is not None:
        requests.append(
            LeaseRequest(
                key=rate_key(job_name, rate, input),
                limit=rate.count,
                kind="rate",
                ttl_seconds=rate.period_seconds,
            )
        )
    return requests


def fixed_requests(
    job_name: str, concurrency: Concurrency | None, rate: Rate | None
) -> tuple[LeaseRequest, ...] | None:
    """The :func:`lease_requests` of every run of ``job_name``, when no limit has a key
    function (none: no limit); ``None`` when each run's input decides its keys."""
    if (concurrency is None or concurrency.key is None) and (rate is None or rate.key is None):
        return tuple(lease_requests(job_name, concurrency, rate, {}))
    return None
