"""Consumers: ``consumer(name, source=..., handle=...)`` reads a stream of rows in batches after a
committed cursor; each batch and the cursor that moves past it commit in one transaction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ultimat3_jobs.lazy import lazy_exports

if TYPE_CHECKING:
    from ultimat3_jobs.consumers.declare import (
        ConsumerHandle,
        consumer,
        consumer_named,
        registered_consumers,
    )
    from ultimat3_jobs.consumers.source import Source, rows_after

__all__ = [
    "ConsumerHandle",
    "Source",
    "consumer",
    "consumer_named",
    "registered_consumers",
    "rows_after",
]

# The names load on first use: importing this package (as models.py does, for the table) touches
# neither settings nor the job registry.
__getattr__ = lazy_exports(
    __name__,
    {
        "ConsumerHandle": ".declare",
        "Source": ".source",
        "consumer": ".declare",
        "consumer_named": ".declare",
        "registered_consumers": ".declare",
        "rows_after": ".source",
    },
)
