"""The Redis driver's scheduler statements (``scheduler.sql``: the leader lease, the crons'
watermarks, the fenced fire) and its worker registry (``workers.sql``), one script each."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ultimat3_jobs.drivers.base import QUEUE_DEMAND_ROWS, check_heartbeat_queues
from ultimat3_jobs.drivers.redis import codec
from ultimat3_jobs.drivers.redis.connection import RedisStore
from ultimat3_jobs.drivers.redis.scripts import speaks_seam_errors
from ultimat3_jobs.types import CronState, EnqueueRequest, FireResult, Leadership, WorkerRecord


@speaks_seam_errors
class SchedulerMethods(RedisStore):
    """Elect a leader, fire a cron once per occurrence; register workers."""

    def leader_attempt_elect(
        self, *, name: str, holder: str, ttl_seconds: float
    ) -> Leadership | None:
        answer = self._run("leader_attempt_elect", [name, holder, repr(float(ttl_seconds))])
        if answer is None:
            return None
        epoch, expires_at, now = answer
        return Leadership(
            epoch=int(epoch),
            expires_at=codec.moment(expires_at),  # type: ignore[arg-type]
            store_now=codec.moment(now),  # type: ignore[arg-type]
        )

    def leader_resign(self, *, name: str, holder: str) -> bool:
        return bool(self._run("leader_resign", [name, holder]))

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
        codec.check_request(request)
        args = [
            cron,
            str(codec.micros(old_watermark)),
            str(codec.micros(occurrence)),
            "1" if dispatch else "0",
            leader,
            holder,
            str(int(epoch)),
            *codec.enqueue_args(request),
        ]
        moved, job_id = self._run("scheduler_fire", args)
        return FireResult(
            moved=bool(moved), job_id=None if job_id is None else uuid.UUID(codec.text(job_id))
        )

    def scheduler_cron_sync(self, *, names: Sequence[str]) -> dict[str, CronState]:
        names = list(names)
        return _cron_states(names, self._run("scheduler_cron_sync", names) if names else [])

    def scheduler_cron_read(self, *, names: Sequence[str]) -> dict[str, CronState]:
        names = list(dict.fromkeys(names))
        return _cron_states(names, self._run("scheduler_cron_read", names) if names else [])

    # -- the worker registry ------------------------------------------------------------------

    def worker_heartbeat(
        self,
        *,
        worker_id: str,
        host: str,
        pid: int,
        queues: Sequence[str],
        slots: int,
        ttl_seconds: float,
        draining: bool = False,
        limits: Mapping[str, Mapping[str, int]] | None = None,
    ) -> None:
        names = check_heartbeat_queues(queues)
        args = [
            worker_id,
            host,
            str(int(pid)),
            json.dumps(names),
            str(int(slots)),
            repr(float(ttl_seconds)),
            "1" if draining else "0",
            str(QUEUE_DEMAND_ROWS),
            json.dumps({what: dict(counts) for what, counts in (limits or {}).items()}),
            *names,
        ]
        self._run("worker_heartbeat", args)

    def worker_list(self) -> list[WorkerRecord]:
        workers = [codec.worker_record(row) for row in self._run("worker_list")]
        workers.sort(key=lambda worker: worker.id)
        return workers

    def worker_remove(self, *, worker_id: str) -> bool:
        return bool(self._run("worker_remove", [worker_id]))


def _cron_states(names: Sequence[str], answer: Sequence[Any]) -> dict[str, CronState]:
    """The states a cron script answered, one ``watermark last_fire_at last_job_id`` per name;
    a cron with no watermark (never seen) is left out."""
    states = {}
    for name, (watermark, last_fire_at, last_job_id) in zip(names, answer, strict=True):
        if watermark is None:
            continue
        job_id = codec.text(last_job_id)
        states[name] = CronState(
            name=name,
            watermark=codec.moment(watermark),  # type: ignore[arg-type]
            last_fire_at=codec.moment(last_fire_at),
            last_job_id=None if job_id is None else uuid.UUID(job_id),
        )
    return states
