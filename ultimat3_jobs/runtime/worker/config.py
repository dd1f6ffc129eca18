"""``WorkerConfig``: one worker's settings, from ``ULTIMAT3_JOBS`` plus its command line."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import ultimat3_jobs.conf as conf
from ultimat3_jobs.records import ProcessLimits
from ultimat3_jobs.runtime.common.backoff import PollTimes
from ultimat3_jobs.runtime.common.config import FieldSource, config_from_settings
from ultimat3_jobs.runtime.common.ids import default_worker_id


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerConfig(PollTimes):
    """What one worker process does. Times are in seconds; each default is its setting's
    (``SETTINGS``)."""

    queues: tuple[str, ...]
    concurrency: int
    worker_id: str = field(default_factory=default_worker_id)
    burst: bool = False
    max_jobs: int | None = None
    max_memory_mb: float | None = None
    lease_seconds: float = conf.VISIBILITY_TIMEOUT_SECONDS_DEFAULT
    heartbeat_interval: float = conf.HEARTBEAT_INTERVAL_SECONDS_DEFAULT
    rescue_interval: float = conf.RESCUE_INTERVAL_SECONDS_DEFAULT
    registry_interval: float = conf.REGISTRY_INTERVAL_SECONDS_DEFAULT
    shutdown_grace: float = conf.SHUTDOWN_GRACE_SECONDS_DEFAULT
    timeout_grace: float = conf.TIMEOUT_GRACE_SECONDS_DEFAULT
    ack_flush: float = conf.ACK_FLUSH_SECONDS_DEFAULT
    progress_interval: float = conf.PROGRESS_INTERVAL_SECONDS_DEFAULT
    limits: ProcessLimits = field(default_factory=ProcessLimits)
    """The per-process limiter (``ULTIMAT3_JOBS["LIMITS"]``, see ``limiter.py``)."""

    SETTINGS: ClassVar[Mapping[str, FieldSource]] = {
        **PollTimes.SETTINGS,
        "queues": lambda s: (s.default_queue,),
        "concurrency": "worker_concurrency",
        "lease_seconds": "visibility_timeout_seconds",
        "heartbeat_interval": "heartbeat_interval_seconds",
        "rescue_interval": "rescue_interval_seconds",
        "registry_interval": "registry_interval_seconds",
        "shutdown_grace": "shutdown_grace_seconds",
        "timeout_grace": "timeout_grace_seconds",
        "ack_flush": "ack_flush_seconds",
        "progress_interval": "progress_interval_seconds",
        "limits": "limits",
    }

    @classmethod
    def from_settings(cls, settings: conf.Settings | None = None, **options: Any) -> WorkerConfig:
        """Settings first, then any option given (``None`` keeps the setting); ``queues`` may
        be any iterable of names."""
        if options.get("queues") is not None:
            options["queues"] = tuple(options["queues"])
        return config_from_settings(cls, settings, options)
