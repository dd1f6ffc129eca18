"""The operator tests reuse the parity fixtures (``driver``, ``store``: once per driver) and the
worker tests' in-process Worker (``make_worker``)."""

from __future__ import annotations

from tests.drivers.conftest import driver, store
from tests.worker.conftest import make_worker

__all__ = ["driver", "make_worker", "store"]
