"""``ClaimInFlight``: whether the claim loop's claim is on its way, and a wait for it to land.

The claim loop marks its claim (``ClaimAhead.claiming``) from the moment it asks until the
attempts it took were given their slots (:meth:`ClaimInFlight.begin`, :meth:`~.end`). The
settler waits on it before a flush would free concurrency slots that nobody was lent
(``handoff.py``): the runs that claim brings are lent those slots, and the flush passes the
rows to them instead of deleting them, so that the worker does not take the same rows again
with a statement of its own. A claim lands for the settler once its runs were lent what could be
lent, before the lease gate's own statement (``limits.py``) for the others.

With no claim on its way, while the loop waits for the settler to claim again (its settle
backlog, ``ahead.py``) and the last claim took all it asked (:attr:`~ClaimInFlight.more`: more
is queued), a settler whose flush would free such slots asks the loop for its claim first
(:meth:`ClaimInFlight.ask`) and waits for it the same way, so that its settle does not delete
the rows the claim's runs would take again.
"""

from __future__ import annotations

import threading
import time


class ClaimInFlight:
    """Marked by the claim loop, waited on by the settler."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._flying = False
        self._landed = 0
        self.asked = False
        """The settler asked for a claim, not begun yet."""
        self.more = False
        """The last claim took all it asked: more is likely queued."""

    @property
    def flying(self) -> bool:
        """Whether a claim is on its way now."""
        return self._flying

    def begin(self) -> float:
        """A claim is asked now; answers the moment (``time.monotonic()``)."""
        with self._changed:
            self._flying = True
            self.asked = False
        return time.monotonic()

    def end(self, *, more: bool | None = None) -> None:
        """The claim landed (or failed): what it took was lent what could be lent (the gate's
        lease statement may follow); ``more``, told by the loop once its runs were given
        their slots: it took all it asked."""
        with self._changed:
            if more is not None:
                self.more = more
            if self._flying:
                self._flying = False
                self._landed += 1
                self._changed.notify_all()

    def ask(self) -> None:
        """The settler wants a claim now (the loop is woken by the caller)."""
        self.asked = True

    def wait(self, timeout: float) -> bool:
        """Wait at most ``timeout`` s for the claim on its way, or asked, to land; answers
        whether one was on its way or asked."""
        with self._changed:
            if not self._flying and not self.asked:
                return False
            landed = self._landed
            self._changed.wait_for(lambda: self._landed > landed, timeout)
            return True
