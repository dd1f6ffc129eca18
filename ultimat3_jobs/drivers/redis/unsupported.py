"""What the Redis driver does not provide yet, said loudly: the retention methods (the purge
factory's targets), the backfill ledger and the lease store. Each flag is ``False`` and each
method refuses with :class:`~ultimat3_jobs.errors.DriverCapabilityMissing`, never a silent no-op
(the lease store's acquire, holders, abandon and release refuse with the seam's
:class:`~ultimat3_jobs.errors.ConcurrencyUnenforceable`, what a worker reports)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, ClassVar, NoReturn

from ultimat3_jobs.errors import DriverCapabilityMissing


def _missing(capability: str, method: str) -> NoReturn:
    raise DriverCapabilityMissing(
        f"the redis driver keeps no {capability} ({method}); run this on the PostgreSQL or "
        "memory driver"
    )


class MissingRetention:
    """The retention methods of ``drivers/retention_seam.py``, refused."""

    has_retention: ClassVar[bool] = False

    def clock_now(self) -> datetime:
        _missing("retention methods", "clock_now")

    def job_purge_finished(self, *, state: Any, before: datetime, limit: int) -> int:
        _missing("retention methods", "job_purge_finished")

    def job_count_finished(self, *, state: Any, before: datetime, limit: int) -> int:
        _missing("retention methods", "job_count_finished")

    def event_count_expired(self, *, before: datetime, limit: int) -> int:
        _missing("retention methods", "event_count_expired")

    def counter_purge(self, *, before: datetime, limit: int) -> int:
        _missing("retention methods", "counter_purge")

    def counter_count(self, *, before: datetime, limit: int) -> int:
        _missing("retention methods", "counter_count")


class MissingBackfillLedger:
    """The backfill ledger of ``drivers/backfill_seam.py``, refused."""

    has_backfill_ledger: ClassVar[bool] = False

    def backfill_start(
        self, *, name: str, scope: str, run_id: uuid.UUID, environment: str
    ) -> NoReturn:
        _missing("backfill ledger", "backfill_start")

    def backfill_advance(
        self, *, run_id: uuid.UUID, batch: int, cursor_json: str, rows: int
    ) -> bool:
        _missing("backfill ledger", "backfill_advance")

    def backfill_finish(self, *, run_id: uuid.UUID, status: Any, error: str = "") -> bool:
        _missing("backfill ledger", "backfill_finish")

    def backfill_list(self, *, limit: int = 0) -> list[Any]:
        _missing("backfill ledger", "backfill_list")


class MissingLeaseStore:
    """The lease store of ``drivers/leases_seam.py``, not kept: the seam's defaults refuse each
    method, so a worker refuses to start with a declared limit and ``jobs leases`` says why."""

    has_lease_store: ClassVar[bool] = False

    def lease_list(self, *, kind: Any = None, limit: int = 0) -> list[Any]:
        _missing("lease store", "lease_list")
