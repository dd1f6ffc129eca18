"""Deprecated path of the worker. Use ``ultimat3_jobs.runtime.worker``."""

from __future__ import annotations

import warnings

from ultimat3_jobs.runtime.worker import Worker, WorkerConfig

__all__ = ["Worker", "WorkerConfig"]

warnings.warn(
    "ultimat3_jobs.worker is deprecated: import Worker and WorkerConfig from "
    "ultimat3_jobs.runtime.worker",
    DeprecationWarning,
    stacklevel=2,
)
