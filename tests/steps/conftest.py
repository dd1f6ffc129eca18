"""The step tests run a real worker as the worker tests do."""

from __future__ import annotations

from tests.worker.conftest import make_worker

__all__ = ["make_worker"]
