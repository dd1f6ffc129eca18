"""Deprecated path of the job context. Use ``from ultimat3_jobs import JobContext`` and
``ultimat3_jobs.model.context.current_tenant``."""

from __future__ import annotations

import warnings

from ultimat3_jobs.model.context import JobContext, current_job, current_tenant

__all__ = ["JobContext", "current_job", "current_tenant"]

warnings.warn(
    "ultimat3_jobs.context is deprecated: import JobContext from ultimat3_jobs and "
    "current_tenant from ultimat3_jobs.model.context",
    DeprecationWarning,
    stacklevel=2,
)
