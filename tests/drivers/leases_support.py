"""Store controls for the lease parity tests: read every lease row and expire a key's rows, as
an UPDATE does on PostgreSQL, the memory driver's state does in memory, and a write of the
key's hash does on Redis."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from tests.drivers.support import HOUR, utcnow
from ultimat3_jobs.drivers.base import JobDriver, LeaseHolder
from ultimat3_jobs.models import JobLease


def _redis_rows(driver: Any) -> dict[str, dict[int, list[str]]]:
    """Every lease hash of a Redis store: key -> slot -> the row's fields."""
    client, head = driver.redis(), f"{driver.prefix}:lease:"
    found: dict[str, dict[int, list[str]]] = {}
    for name in client.scan_iter(match=f"{head}*", count=1000):
        key = name.decode()[len(head) :]
        rows = client.hgetall(name)
        found[key] = {int(slot): value.decode().split("\t") for slot, value in rows.items()}
    return found


def lease_rows(driver: JobDriver) -> list[tuple[str, int, str]]:
    """Every stored row, live or expired, as (key, slot, kind), sorted."""
    if driver.name == "postgres":
        rows = JobLease.objects.values_list("key", "slot", "kind")
        return sorted((key, slot, kind) for key, slot, kind in rows)
    if driver.name == "redis":
        stored = _redis_rows(driver)
        return sorted((k, slot, row[0]) for k, rows in stored.items() for slot, row in rows.items())
    memory: Any = driver
    return sorted((h.key, h.slot, h.kind) for h in memory._leases.values())


def expire_key(driver: JobDriver, key: str, *, by: timedelta = HOUR) -> None:
    """Every row of ``key`` expired ``by`` ago."""
    when = utcnow() - by
    if driver.name == "postgres":
        assert JobLease.objects.filter(key=key).update(expires_at=when) >= 1
        return
    if driver.name == "redis":
        rows = _redis_rows(driver).get(key)
        assert rows
        micros = str(int(when.timestamp() * 1_000_000))
        moved = {slot: "\t".join([*row[:4], micros]) for slot, row in rows.items()}
        driver.redis().hset(f"{driver.prefix}:lease:{key}", mapping=moved)  # type: ignore[attr-defined]
        return
    memory: Any = driver
    with memory._lock:
        places = [place for place in memory._leases if place[0] == key]
        assert places
        for place in places:
            holder: LeaseHolder = memory._leases[place]
            memory._leases[place] = replace(holder, expires_at=when)
