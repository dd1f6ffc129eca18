"""The outbox relay: publishes jobs staged in ``x_outbox`` to the job store after commit.

Layer L4 (processes): speaks only to an :class:`~ultimat3_jobs.drivers.base.OutboxStore` and a
:class:`~ultimat3_jobs.drivers.base.JobDriver` it is handed.
"""

from __future__ import annotations

from ultimat3_jobs.outbox.relay import Relay, RelayConfig

__all__ = ["Relay", "RelayConfig"]
