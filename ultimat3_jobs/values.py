"""Rules on plain values that many declarations and seam checks share.

Layer L1 (core): the standard library only.
"""

from __future__ import annotations

from typing import TypeGuard


def whole_number(value: object, low: int, high: int | None = None) -> TypeGuard[int]:
    """Whether ``value`` is an integer (never a bool, which Python counts as one) from ``low`` to
    ``high`` inclusive, or of at least ``low`` when ``high`` is ``None``."""
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value >= low
        and (high is None or value <= high)
    )
