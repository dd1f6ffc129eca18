"""Job stores. :func:`get_driver` answers the configured driver.

Layer L2 (the seam): imports L1 and, by dotted path only, a concrete driver. The concrete drivers
(``memory``, ``postgres``) implement :class:`~ultimat3_jobs.drivers.base.JobDriver` and never
import the runtime.
"""

from __future__ import annotations

import threading

from django.utils.module_loading import import_string

from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.drivers.base import JobDriver, OutboxStore
from ultimat3_jobs.errors import JobsConfigurationError

_lock = threading.Lock()
_drivers: dict[str, JobDriver] = {}


def get_driver() -> JobDriver:
    """The driver named by ``ULTIMAT3_JOBS['DRIVER']``, built once per process and settings."""
    settings = get_settings()
    path = settings.driver_path
    key = f"{path}@{settings.database}"
    driver = _drivers.get(key)
    if driver is not None:
        return driver
    with _lock:
        driver = _drivers.get(key)
        if driver is None:
            try:
                driver_class = import_string(path)
            except ImportError as exc:
                raise JobsConfigurationError(
                    f"ULTIMAT3_JOBS['DRIVER'] names {path!r}, which cannot be imported: {exc}"
                ) from exc
            if not (isinstance(driver_class, type) and issubclass(driver_class, JobDriver)):
                raise JobsConfigurationError(
                    f"ULTIMAT3_JOBS['DRIVER'] names {path!r}, which is not a JobDriver subclass"
                )
            driver = driver_class(database=settings.database)
            _drivers[key] = driver
        return driver


OUTBOX_STORE_PATH = "ultimat3_jobs.drivers.postgres.outbox.PostgresOutbox"
MEMORY_OUTBOX_PATH = "ultimat3_jobs.drivers.memory.outbox.MemoryOutbox"
_outboxes: dict[str, OutboxStore] = {}


def get_outbox() -> OutboxStore:
    """The outbox on ``ULTIMAT3_JOBS['OUTBOX_DATABASE']``, built once per alias:
    ``PostgresOutbox`` (``x_outbox``) wherever that alias is a PostgreSQL database, whatever the
    driver; ``MemoryOutbox`` (this process's memory, like its jobs) for the memory driver on an
    alias of another vendor, where ``x_outbox`` cannot be."""
    alias = get_settings().outbox_database
    path = outbox_store_path(alias)
    key = f"{path}@{alias}"
    with _lock:
        outbox = _outboxes.get(key)
        if outbox is None:
            outbox = import_string(path)(database=alias)
            _outboxes[key] = outbox
        return outbox


def outbox_store_path(alias: str) -> str:
    """The dotted path of the outbox store :func:`get_outbox` builds for ``alias``."""
    if get_driver().name == "memory" and not import_string(OUTBOX_STORE_PATH).serves(alias):
        return MEMORY_OUTBOX_PATH
    return OUTBOX_STORE_PATH


def reset_drivers() -> None:
    """Forget built drivers and outboxes (on ``setting_changed``, and between tests)."""
    with _lock:
        for driver in _drivers.values():
            driver.close()
        for outbox in _outboxes.values():
            outbox.close()
        _drivers.clear()
        _outboxes.clear()
