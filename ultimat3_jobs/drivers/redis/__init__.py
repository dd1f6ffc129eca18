"""The Redis driver: the job store in Redis, on the client of a django-redis cache alias.

``driver.py`` (the worker's job methods), ``operating.py`` (operator reads and writes, pauses,
counters), ``scheduling.py`` (the scheduler and the worker registry), ``steps.py`` (durable
steps and events), ``leases.py`` (the lease store of limits), ``retention.py`` (the purge's
deletes) and ``backfills.py`` (the backfill ledger) each run one Lua script per operation
(``lua/<operation>.lua``) through ``scripts.py``; ``codec.py`` converts what crosses;
``wake.py`` is the pub/sub wake. The settings' alias ``"redis"`` names the class re-exported here.
"""

from __future__ import annotations

from ultimat3_jobs.drivers.redis.driver import RedisDriver
from ultimat3_jobs.drivers.redis.wake import RedisWake

__all__ = ["RedisDriver", "RedisWake"]
