"""The scheduler's methods of :class:`~ultimat3_jobs.drivers.postgres.driver.PostgresDriver`:
the leader's lease, the fire of an occurrence, the crons' watermarks."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ultimat3_jobs.drivers.postgres.params import enqueue_params
from ultimat3_jobs.drivers.postgres.rows import scheduler as scheduler_rows
from ultimat3_jobs.drivers.postgres.rows.result import fetch
from ultimat3_jobs.drivers.postgres.translate import speaks_seam_errors
from ultimat3_jobs.models import RawStatementManager
from ultimat3_jobs.types import CronState, EnqueueRequest, FireResult, Leadership


@speaks_seam_errors
class SchedulerMethods:
    """Mixed into the driver; reads its statement managers."""

    _crons: RawStatementManager
    _leaders: RawStatementManager

    def leader_attempt_elect(
        self, *, name: str, holder: str, ttl_seconds: float
    ) -> Leadership | None:
        params = {"name": name, "holder": holder, "ttl_seconds": float(ttl_seconds)}
        return scheduler_rows.leadership(fetch(self._leaders, "leader_attempt_elect", params))

    def leader_resign(self, *, name: str, holder: str) -> bool:
        return bool(self._leaders.run("leader_resign", {"name": name, "holder": holder}))

    def scheduler_fire(
        self,
        *,
        cron: str,
        old_watermark: datetime,
        occurrence: datetime,
        dispatch: bool,
        request: EnqueueRequest,
        leader: str,
        holder: str,
        epoch: int,
    ) -> FireResult:
        params = enqueue_params(request)
        params.update(
            cron=cron,
            old_watermark=old_watermark,
            occurrence=occurrence,
            dispatch=dispatch,
            leader=leader,
            holder=holder,
            epoch=epoch,
        )
        return scheduler_rows.fire_result(fetch(self._crons, "scheduler_fire", params))

    def scheduler_cron_sync(self, *, names: Sequence[str]) -> dict[str, CronState]:
        if not names:
            return {}
        params = {"names": list(dict.fromkeys(names))}
        return scheduler_rows.cron_states(fetch(self._crons, "scheduler_cron_sync", params))

    def scheduler_cron_read(self, *, names: Sequence[str]) -> dict[str, CronState]:
        if not names:
            return {}
        params = {"names": list(dict.fromkeys(names))}
        return scheduler_rows.cron_states(fetch(self._crons, "scheduler_cron_read", params))
