"""Calls counted rather than timed (the host is shared and noisy), with ``sys.monitoring``."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def calls_counted(
    tool_name: str, *, name_of: Callable[[object], str | None] | None = None
) -> Iterator[Counter[str]]:
    """Counts, on every thread, the calls made from Python code while open (CALL events:
    Python and C functions alike) as ``calls``, and those of ``object.__setattr__`` apart: a
    frozen dataclass's generated ``__init__`` makes one per field; and those of the callables
    ``name_of`` names, under that name."""
    monitoring = sys.monitoring
    tool = next(t for t in range(2, 6) if monitoring.get_tool(t) is None)
    counts: Counter[str] = Counter()
    setattr_ = object.__setattr__

    def called(code: object, offset: int, callable_: object, arg0: object) -> object:
        counts["calls"] += 1
        if callable_ is setattr_:
            counts["object.__setattr__"] += 1
        name = None if name_of is None else name_of(callable_)
        if name is not None:
            counts[name] += 1
        return None

    monitoring.use_tool_id(tool, tool_name)
    monitoring.register_callback(tool, monitoring.events.CALL, called)
    monitoring.set_events(tool, monitoring.events.CALL)
    try:
        yield counts
    finally:
        monitoring.set_events(tool, 0)
        monitoring.register_callback(tool, monitoring.events.CALL, None)
        monitoring.free_tool_id(tool)
