"""The retention deletes of the PostgreSQL driver (``sql/retention.sql``), mixed into
:class:`~ultimat3_jobs.drivers.postgres.driver.PostgresDriver`. Each method is one statement;
the bounds and the refusals are the seam's (``drivers/retention_seam.py``)."""

from __future__ import annotations

from datetime import datetime

from ultimat3_jobs.drivers.postgres.rows import operator as operator_rows
from ultimat3_jobs.drivers.postgres.rows.result import fetch
from ultimat3_jobs.drivers.postgres.translate import speaks_seam_errors
from ultimat3_jobs.drivers.retention_seam import check_finished_state, check_purge_limit
from ultimat3_jobs.models import RawStatementManager
from ultimat3_jobs.types import JobState


@speaks_seam_errors
class RetentionStatements:
    """Mixed into the driver; reads its ``x_jobs`` statement manager."""

    _jobs: RawStatementManager

    def clock_now(self) -> datetime:
        (now,) = fetch(self._jobs, "clock_now", {}).first("now") or (None,)
        assert isinstance(now, datetime)
        return now

    def job_purge_finished(self, *, state: JobState | str, before: datetime, limit: int) -> int:
        params = {"state": check_finished_state(state).value, "before": before}
        if check_purge_limit(limit) == 0:
            return 0
        return len(self._jobs.run("job_purge_finished", {**params, "limit": limit}))

    def job_count_finished(self, *, state: JobState | str, before: datetime, limit: int) -> int:
        params = {"state": check_finished_state(state).value, "before": before, "limit": limit}
        return operator_rows.count(fetch(self._jobs, "job_count_finished", params))

    def event_count_expired(self, *, before: datetime, limit: int) -> int:
        params = {"before": before, "limit": int(limit)}
        return operator_rows.count(fetch(self._jobs, "event_count_expired", params))

    def counter_purge(self, *, before: datetime, limit: int) -> int:
        if check_purge_limit(limit) == 0:
            return 0
        return len(self._jobs.run("counter_purge", {"before": before, "limit": limit}))

    def counter_count(self, *, before: datetime, limit: int) -> int:
        params = {"before": before, "limit": int(limit)}
        return operator_rows.count(fetch(self._jobs, "counter_count", params))
