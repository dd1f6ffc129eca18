"""The loops a worker process may run beside its own (``jobs_worker --with-relay``,
``--with-scheduler``), each imported on its first use rather than when the worker's modules
load: a worker started without them, the usual deployment, never imports the relay or the
scheduler (nor croniter's walk, nor their configs' dataclasses).

Use as ``beside.relay.RelayConfig``: the attribute is read when the code runs, never at import.

Layer L4 (processes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ultimat3_jobs.lazy import lazy_modules

if TYPE_CHECKING:
    from ultimat3_jobs.runtime import relay
    from ultimat3_jobs.runtime.scheduler import scheduler

__all__ = ["relay", "scheduler"]

__getattr__ = lazy_modules(
    __name__,
    {
        "relay": "ultimat3_jobs.runtime.relay",
        "scheduler": "ultimat3_jobs.runtime.scheduler.scheduler",
    },
)
