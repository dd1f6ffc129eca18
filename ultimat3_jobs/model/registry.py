"""The registry of declared jobs: name → handle, filled by ``@job`` and by autodiscovery of each
installed app's ``jobs`` module.

Layer L3 (job model).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from django.utils.module_loading import autodiscover_modules

from ultimat3_jobs.errors import JobNameDuplicate, JobUnknown

if TYPE_CHECKING:
    from ultimat3_jobs.model.definitions import JobDefinition, JobHandle


class Registry:
    """Declared jobs by name. A second declaration under a taken name is refused, unless it is
    the same function declared again (a module imported twice)."""

    def __init__(self) -> None:
        self._handles: dict[str, JobHandle] = {}
        self._resolved: dict[str, JobHandle] = {}
        self._resolvers: dict[str, Callable[[str], JobHandle | None]] = {}
        self._lock = threading.Lock()

    def add_resolver(self, prefix: str, resolve: Callable[[str], JobHandle | None]) -> None:
        """Resolve names starting with ``prefix`` that no ``@job`` declared (the Django Tasks
        backend names its jobs after the task's module path). A resolver decides what it
        accepts; it must never import what a stored name alone points at."""
        with self._lock:
            self._resolvers[prefix] = resolve

    def find(self, name: str) -> JobHandle | None:
        """The handle for ``name``: declared, or answered by a resolver; ``None`` otherwise."""
        handle = self._handles.get(name) or self._resolved.get(name)
        if handle is not None:
            return handle
        for prefix, resolve in list(self._resolvers.items()):
            if name.startswith(prefix):
                handle = resolve(name)
                if handle is not None:
                    with self._lock:
                        self._resolved[name] = handle
                    return handle
        return None

    def register(self, handle: JobHandle) -> None:
        definition = handle.definition
        with self._lock:
            existing = self._handles.get(definition.name)
            if existing is not None and existing.definition.location != definition.location:
                raise JobNameDuplicate(
                    f"job name {definition.name!r} is declared twice: by "
                    f"{existing.definition.location} and by {definition.location}; give one "
                    "of them another name=..."
                )
            self._handles[definition.name] = handle

    def unregister(self, name: str) -> None:
        with self._lock:
            self._handles.pop(name, None)

    def get(self, name: str) -> JobHandle:
        """The handle declared under ``name``; :class:`JobUnknown` when there is none."""
        handle = self.find(name)
        if handle is None:
            raise JobUnknown(
                f"no job is declared under the name {name[:200]!r}; declared jobs live in an "
                "installed app's jobs.py",
                field="name",
                rule="declared-job",
            )
        return handle

    def definitions(self) -> list[JobDefinition]:
        """Every declared job, by name."""
        return [self._handles[name].definition for name in sorted(self._handles)]

    def crons(self) -> list[JobDefinition]:
        """Every declared cron job (``@cron``), by name."""
        return [d for d in self.definitions() if d.schedule is not None]

    def __contains__(self, name: object) -> bool:
        return name in self._handles

    def __len__(self) -> int:
        return len(self._handles)


registry = Registry()


def autodiscover() -> None:
    """Import the ``jobs`` module of every installed app (from ``AppConfig.ready``)."""
    autodiscover_modules("jobs")
