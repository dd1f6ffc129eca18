"""``ClaimInFlight``: whether the claim loop's claim is on its way, and a wait for it to land.

The claim loop marks its claim (``ClaimAhead.claiming``) from the moment it asks until the
attempts it took were given their slots (:meth:`ClaimInFlight.begin`, :meth:`~.end`). The
settler waits on it before a flush would free concurrency slots that nobody was lent
(``handoff.py``): the runs that claim brings are lent those slots, and the flush passes the
rows to them instead of deleting them, so that the worker does not take the same rows again
with a statement of its own.
"""

from __future__ import annotations

import threading
import time


class ClaimInFlight:
    """Marked by the claim loop, waited on by the settler."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._flying = False

    @property
    def flying(self) -> bool:
        """Whether a claim is on its way now."""
        return self._flying

    def begin(self) -> float:
        """A claim is asked now; answers the moment (``time.monotonic()``)."""
        with self._changed:
            self._flying = True
        return time.monotonic()

    def end(self) -> None:
        """The claim landed (or failed): what it took was given its slots."""
        with self._changed:
            self._flying = False
            self._changed.notify_all()

    def wait(self, timeout: float) -> bool:
        """Wait at most ``timeout`` s for the claim on its way to land; answers whether one
        was on its way."""
        with self._changed:
            if not self._flying:
                return False
            self._changed.wait_for(lambda: not self._flying, timeout)
            return True
