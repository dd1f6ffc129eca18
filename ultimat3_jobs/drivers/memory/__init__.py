"""The memory driver: the job store (and the outbox) in this process's memory, for tests and
local development.

One module per table family, mirroring ``drivers/postgres/sql/*.sql``: ``jobs.py``,
``operator.py``, ``pauses.py``, ``counters.py``, ``scheduler.py``, ``workers.py``, assembled by
``store.py`` over the shared state of ``state.py`` (rows in ``rows.py``, claim heaps in
``heaps.py``); ``wake.py`` the wake subscription, ``commit.py`` the transaction rule, ``outbox.py``
the outbox store. The settings' dotted path ``ultimat3_jobs.drivers.memory.MemoryDriver`` names
the class re-exported here.
"""

from __future__ import annotations

from ultimat3_jobs.drivers.memory.outbox import MemoryOutbox
from ultimat3_jobs.drivers.memory.store import MemoryDriver
from ultimat3_jobs.drivers.memory.wake import MemoryWake

__all__ = ["MemoryDriver", "MemoryOutbox", "MemoryWake"]
