"""The Redis driver's retention deletes (``lua/job_purge_finished.lua`` and the other
``*_purge``/``*_count`` scripts), mixed into
:class:`~ultimat3_jobs.drivers.redis.driver.RedisDriver`: the rules of
``drivers/retention_seam.py``, one script per method.

Each delete walks an index in its own order, so a pass touches at most ``limit`` rows and never
scans: finished jobs by ``finished_at`` per state (``B:finished:<s>``, kept by every move to and
from a finished state), events by expiry (``B:event_expiry``) and counter rows by bucket
(``B:counter_rows:<p>``, kept by the settles and the rollup). A purged job's steps go in the
same script. The cutoff is the pass's one reading of Redis ``TIME`` (:meth:`clock_now`).
"""

from __future__ import annotations

from datetime import datetime

from ultimat3_jobs.drivers.redis import codec
from ultimat3_jobs.drivers.redis.connection import RedisStore
from ultimat3_jobs.drivers.redis.scripts import speaks_seam_errors
from ultimat3_jobs.drivers.retention_seam import check_finished_state, check_purge_limit
from ultimat3_jobs.types import JobState


def _bound(limit: int) -> str:
    return str(max(0, int(limit)))


@speaks_seam_errors
class RetentionScriptMethods(RedisStore):
    """Finished jobs (their steps with them), expired events and old counter rows."""

    def clock_now(self) -> datetime:
        now = codec.moment(self._run("clock_now"))
        assert now is not None
        return now

    def job_purge_finished(self, *, state: JobState | str, before: datetime, limit: int) -> int:
        found = check_finished_state(state)
        if check_purge_limit(limit) == 0:
            return 0
        args = [found.value, str(codec.micros(before)), str(limit)]
        return int(self._run("job_purge_finished", args))

    def job_count_finished(self, *, state: JobState | str, before: datetime, limit: int) -> int:
        found = check_finished_state(state)
        args = [found.value, str(codec.micros(before)), _bound(limit)]
        return int(self._run("job_count_finished", args))

    def event_count_expired(self, *, before: datetime, limit: int) -> int:
        args = [str(codec.micros(before)), _bound(limit)]
        return int(self._run("event_count_expired", args))

    def counter_purge(self, *, before: datetime, limit: int) -> int:
        if check_purge_limit(limit) == 0:
            return 0
        return int(self._run("counter_purge", [str(codec.micros(before)), str(limit)]))

    def counter_count(self, *, before: datetime, limit: int) -> int:
        return int(self._run("counter_count", [str(codec.micros(before)), _bound(limit)]))
