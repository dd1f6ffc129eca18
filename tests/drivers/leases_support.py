"""Store controls for the lease parity tests: read every lease row and expire a key's rows, as
an UPDATE does on PostgreSQL and the memory driver's state does in memory."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from tests.drivers.support import HOUR, utcnow
from ultimat3_jobs.drivers.base import JobDriver, LeaseHolder
from ultimat3_jobs.models import JobLease


def lease_rows(driver: JobDriver) -> list[tuple[str, int, str]]:
    """Every stored row, live or expired, as (key, slot, kind), sorted."""
    if driver.name == "postgres":
        rows = JobLease.objects.values_list("key", "slot", "kind")
        return sorted((key, slot, kind) for key, slot, kind in rows)
    memory: Any = driver
    return sorted((h.key, h.slot, h.kind) for h in memory._leases.values())


def expire_key(driver: JobDriver, key: str, *, by: timedelta = HOUR) -> None:
    """Every row of ``key`` expired ``by`` ago."""
    when = utcnow() - by
    if driver.name == "postgres":
        assert JobLease.objects.filter(key=key).update(expires_at=when) >= 1
        return
    memory: Any = driver
    with memory._lock:
        places = [place for place in memory._leases if place[0] == key]
        assert places
        for place in places:
            holder: LeaseHolder = memory._leases[place]
            memory._leases[place] = replace(holder, expires_at=when)
