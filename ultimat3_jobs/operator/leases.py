"""What an operator reads and does about limits: every held key with its holders, its declared
limit and its expiry (``manage.py jobs leases``, the admin's queues page), held slots per job
name (the metrics), and the release of a stuck key (``jobs leases release KEY``, the admin's
release button).

Lease keys are the ones :mod:`ultimat3_jobs.model.limits` writes: ``job:<name>``,
``job-key:<name>:<key>``, ``rate:<name>``, ``rate-key:<name>:<key>``, each part with ``%`` and
``:`` percent-encoded. A key is read back into its parts here; only a concurrency key can be
released (a spent rate stamp stays spent), and anything else is refused with
:class:`~ultimat3_jobs.errors.LeaseKeyInvalid` before the store is asked.

Layer L4 (processes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ultimat3_jobs.drivers.base import LEASE_LIST_MAX, JobDriver, LeaseHolder
from ultimat3_jobs.errors import DriverCapabilityMissing, LeaseKeyInvalid
from ultimat3_jobs.model.registry import Registry
from ultimat3_jobs.model.registry import registry as default_registry

LEASE_KEY_MAX_LENGTH = 600
"""The longest key the store holds (``x_job_leases.key``)."""
PREFIXES = {"job": ("concurrency", 2), "job-key": ("concurrency", 3)}
RATE_PREFIXES = {"rate": ("rate", 2), "rate-key": ("rate", 3)}
_ESCAPE = re.compile(r"%(25|3A)")
_BAD_PERCENT = re.compile(r"%(?!25|3A)")


@dataclass(frozen=True, slots=True)
class LeaseKey:
    """A lease key read back: its ``kind``, the ``job`` name and, for a keyed limit, the
    ``part`` the job's key function answered (both unquoted)."""

    text: str
    kind: str
    job: str
    part: str | None


def _unquote(piece: str) -> str:
    return _ESCAPE.sub(lambda m: "%" if m.group(1) == "25" else ":", piece)


def parse_lease_key(text: Any) -> LeaseKey:
    """``text`` read back into its parts, or :class:`LeaseKeyInvalid` naming the rule broken.
    Rate keys are read too (the listing shows them); :func:`release` refuses them."""
    if not isinstance(text, str) or not 1 <= len(text) <= LEASE_KEY_MAX_LENGTH:
        shown = text[:80] if isinstance(text, str) else type(text).__name__
        raise LeaseKeyInvalid(
            f"key must be a string of 1 to {LEASE_KEY_MAX_LENGTH} characters; got {shown!r}",
            field="key",
            rule="length",
        )
    pieces = text.split(":")
    shape = {**PREFIXES, **RATE_PREFIXES}.get(pieces[0])
    if shape is None or len(pieces) != shape[1]:
        raise LeaseKeyInvalid(
            f"key must be job:<name> or job-key:<name>:<key> (rate:<name>, "
            f"rate-key:<name>:<key> for rates), each part with % and : percent-encoded; "
            f"got {text[:80]!r}",
            field="key",
            rule="shape",
        )
    for piece in pieces[1:]:
        if not piece or _BAD_PERCENT.search(piece):
            raise LeaseKeyInvalid(
                f"each part of key must be non-empty, with % written %25 and : written %3A; "
                f"got {text[:80]!r}",
                field="key",
                rule="quoting",
            )
    part = _unquote(pieces[2]) if len(pieces) == 3 else None
    return LeaseKey(text=text, kind=shape[0], job=_unquote(pieces[1]), part=part)


def declared_limit(key: LeaseKey, registry: Registry | None = None) -> int | None:
    """The limit the job declares for ``key`` in this process's registry: its concurrency
    limit or its rate's count; ``None`` when this process does not declare it so."""
    handle = (registry or default_registry).find(key.job)
    if handle is None:
        return None
    definition = handle.definition
    keyed = key.part is not None
    concurrency, rate = definition.concurrency, definition.rate
    if key.kind == "concurrency" and concurrency and (concurrency.key is not None) == keyed:
        return concurrency.limit
    if key.kind == "rate" and rate and (rate.key is not None) == keyed:
        return rate.count
    return None


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _holder(holder: LeaseHolder) -> dict[str, Any]:
    return {
        "slot": holder.slot,
        "job_id": str(holder.job_id),
        "worker_id": holder.worker_id,
        "claim_token": str(holder.claim_token),
        "acquired_at": _iso(holder.acquired_at),
        "expires_at": _iso(holder.expires_at),
    }


def leases_overview(driver: JobDriver, registry: Registry | None = None) -> dict[str, Any]:
    """Every held key (one read, :meth:`~ultimat3_jobs.drivers.base.JobDriver.lease_list`):
    its kind, job name, key part, declared limit, slots held, the first of its rows to expire
    and its holders. ``truncated``: the read stopped at its bound, more rows exist.
    A driver without a lease store refuses with :class:`DriverCapabilityMissing`."""
    if not driver.has_lease_store:
        raise DriverCapabilityMissing(f"driver {driver.name!r} keeps no lease store")
    rows = driver.lease_list(limit=LEASE_LIST_MAX)
    keys: dict[str, list[LeaseHolder]] = {}
    for row in rows:
        keys.setdefault(row.key, []).append(row)
    shown = []
    for text, holders in keys.items():
        try:
            parsed: LeaseKey | None = parse_lease_key(text)
        except LeaseKeyInvalid:
            parsed = None  # written by another version: shown as it is
        shown.append(
            {
                "key": text,
                "kind": holders[0].kind,
                "job": parsed.job if parsed else None,
                "part": parsed.part if parsed else None,
                "limit": declared_limit(parsed, registry) if parsed else None,
                "held": len(holders),
                "expires_at": _iso(min(h.expires_at for h in holders)),
                "holders": [_holder(h) for h in holders],
            }
        )
    return {"keys": shown, "truncated": len(rows) >= LEASE_LIST_MAX}


def release(driver: JobDriver, key: str) -> int:
    """Free every concurrency slot of ``key`` now (the runs holding them go on; their settle
    finds nothing to free). Refused before the store is asked: a malformed key or a rate key
    (:class:`LeaseKeyInvalid`), a driver without a lease store
    (:class:`DriverCapabilityMissing`). Answers how many slots were freed."""
    parsed = parse_lease_key(key)
    if parsed.kind != "concurrency":
        raise LeaseKeyInvalid(
            f"key {key[:80]!r} is a rate key: a spent rate stamp is never released (it frees "
            "itself after its period); only job: and job-key: keys can be",
            field="key",
            rule="concurrency-key",
        )
    if not driver.has_lease_store:
        raise DriverCapabilityMissing(f"driver {driver.name!r} keeps no lease store")
    return driver.lease_release(key=key)


def slots_held(holders: Iterable[LeaseHolder]) -> dict[str, int]:
    """Held concurrency slots per job name (keys that do not read back are left out)."""
    held: dict[str, int] = {}
    for holder in holders:
        if holder.kind != "concurrency":
            continue
        try:
            job = parse_lease_key(holder.key).job
        except LeaseKeyInvalid:
            continue
        held[job] = held.get(job, 0) + 1
    return held
