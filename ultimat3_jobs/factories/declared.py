"""``Declared``: the declarations of one kind (backfills, purges, consumers, subject tables) by
name.

Layer: factories. A factory declares at import time and its job's body, the management command
and the inspection read back by name, from any thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ultimat3_jobs.errors import JobsError


class Declared[T]:
    """Every declaration of one kind, by name; the last declaration under a name wins."""

    def __init__(self, kind: str, refusal: Callable[[str], JobsError]) -> None:
        self._kind = kind
        self._refusal = refusal
        self._lock = threading.Lock()
        self._by_name: dict[str, T] = {}

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._by_name

    def add(self, name: str, declaration: T) -> None:
        with self._lock:
            self._by_name[name] = declaration

    def remove(self, name: str) -> None:
        """Forget the declaration under ``name``, if any."""
        with self._lock:
            self._by_name.pop(name, None)

    def clear(self) -> None:
        """Forget every declaration (for tests)."""
        with self._lock:
            self._by_name.clear()

    def all(self) -> list[T]:
        """Every declaration, by name."""
        with self._lock:
            return [self._by_name[name] for name in sorted(self._by_name)]

    def find(self, name: str) -> T | None:
        """The declaration under ``name``, or ``None``."""
        with self._lock:
            return self._by_name.get(name)

    def get(self, name: str) -> T:
        """The declaration under ``name``, or the kind's refusal naming the declared ones."""
        with self._lock:
            found = self._by_name.get(name)
            known = ", ".join(sorted(self._by_name)) or "none"
        if found is None:
            raise self._refusal(f"no {self._kind} is declared under {name!r} (declared: {known})")
        return found
