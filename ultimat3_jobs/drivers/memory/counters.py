"""The memory driver's settle counters (``drivers/postgres/sql/counters.sql``, and
``counter_read``, ``counter_total`` of ``operator.sql``)."""

from __future__ import annotations

from datetime import datetime, timedelta

from ultimat3_jobs.drivers.base import check_counter_period
from ultimat3_jobs.drivers.memory.rows import CounterKey, _as_utc, _truncate
from ultimat3_jobs.drivers.memory.state import MemoryState
from ultimat3_jobs.types import COUNTER_OUTCOMES, CounterPeriod, CounterRow, CounterTotal


class CounterStatements(MemoryState):
    """Read and roll up the per-minute settle counters."""

    def counter_read(
        self, *, since: datetime, period: CounterPeriod = "minute"
    ) -> list[CounterRow]:
        check_counter_period(period)
        start = _truncate(_as_utc(since), period)
        with self._lock:
            found = [
                CounterRow(name=name, period=period, bucket=bucket, **counts)
                for (name, row_period, bucket), counts in self._counters.items()
                if row_period == period and bucket >= start
            ]
        found.sort(key=lambda row: (row.bucket, row.name))
        return found

    def counter_rollup(self, *, keep_seconds: float) -> int:
        with self._lock:
            cutoff = self.now() - timedelta(seconds=float(keep_seconds))
            folded = 0
            for key in sorted(k for k in self._counters if k[1] == "minute"):
                name, _, bucket = key
                hour = bucket.replace(minute=0, second=0, microsecond=0)
                if hour + timedelta(hours=1) >= cutoff:
                    continue
                counts = self._counters.pop(key)
                target = self._counters.setdefault(
                    (name, "hour", hour), dict.fromkeys(COUNTER_OUTCOMES, 0)
                )
                for column, value in counts.items():
                    target[column] += value
                folded += 1
            return folded

    def counter_total(self) -> list[CounterTotal]:
        with self._lock:
            return CounterTotal.by_name(
                (name, counts) for (name, _, _), counts in self._counters.items()
            )

    def counter_snapshot(self) -> dict[CounterKey, dict[str, int]]:
        """The settle counters as ``{(name, period, bucket): {column: count}}``, one entry per
        row ``x_job_counters`` would hold (test support)."""
        with self._lock:
            return {key: dict(counts) for key, counts in self._counters.items()}
