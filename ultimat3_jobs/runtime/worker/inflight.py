"""``ClaimInFlight``: whether the claim loop's claim is on its way, and a wait for it to land.

The claim loop marks its claim (``ClaimAhead.claiming``) from the moment it asks until the
attempts it took were given their slots (:meth:`ClaimInFlight.begin`, :meth:`~.end`). The
settler waits on it before a flush would free concurrency slots that nobody was lent
(``handoff.py``): the runs that claim brings are lent those slots, and the flush passes the
rows to them instead of deleting them, so that the worker does not take the same rows again
with a statement of its own. A claim lands for the settler once its runs were lent what could be
lent, before the lease gate's own statement (``limits.py``) for the others; as it lands it wakes
the settler for the endings it holds back for it (:attr:`ClaimInFlight.on_land`, ``heldback.py``).

With no claim on its way, while the loop waits for the settler to claim again (its settle
backlog, ``ahead.py``) and the last claim took all it asked (:attr:`~ClaimInFlight.more`: more
is queued), a settler whose flush would free such slots asks the loop for its claim first
(:meth:`ClaimInFlight.ask`) and waits for it the same way, so that its settle does not delete
the rows the claim's runs would take again. A loop that looked after the ask and claims nothing
(its process limits, a full worker, a stop) declines it (:meth:`~ClaimInFlight.decline`): the
flush goes on at once instead of waiting out its timeout, and the loop minds its settle backlog
again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class ClaimInFlight:
    """Marked by the claim loop, waited on by the settler."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._flying = False
        self._answered = 0
        """Claims landed and asks declined: what a wait waits for."""
        self._asks = 0
        self._closed = False
        self.asked = False
        """The settler asked for a claim, not begun (nor declined) yet."""
        self.more = False
        """The last claim took all it asked: more is likely queued."""
        self.on_land: Callable[[], None] | None = None
        """Called (outside the lock) as a claim lands: the settler's endings held for it."""

    @property
    def flying(self) -> bool:
        """Whether a claim is on its way now."""
        return self._flying

    def begin(self, want: int = 1, looked: int | None = None) -> float | None:
        """The loop planned to claim ``want`` after it read :attr:`asks` as ``looked``: a claim
        is asked now, answers the moment (``time.monotonic()``); or, ``want`` none, answers
        ``None`` and declines an ask the plan saw (:meth:`decline`)."""
        if want <= 0:
            self.decline(self._asks if looked is None else looked)
            return None
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
            landed = self._flying
            if landed:
                self._flying = False
                self._answered += 1
                self._changed.notify_all()
        if landed and self.on_land is not None:
            self.on_land()

    def ask(self) -> None:
        """The settler wants a claim now (the loop is woken by the caller); nothing once the
        loop stopped claiming (:meth:`close`)."""
        with self._changed:
            if not self._closed:
                self._asks += 1
                self.asked = True

    @property
    def answered(self) -> int:
        """How many claims landed and asks were declined so far."""
        return self._answered

    @property
    def asks(self) -> int:
        """How many asks so far: the loop reads it before it plans a claim."""
        return self._asks

    def decline(self, looked: int) -> None:
        """The loop planned no claim after it read :attr:`asks` as ``looked``: an ask it saw is
        answered (a flush waiting for it goes on); one that came since stays asked."""
        with self._changed:
            if self.asked and self._asks == looked:
                self.asked = False
                self._answered += 1
                self._changed.notify_all()

    def close(self) -> None:
        """The loop claims no more (the worker is stopping): an ask is declined, and later ones
        are not made."""
        with self._changed:
            self._closed = True
            self.decline(self._asks)

    def wait(self, timeout: float) -> bool:
        """Wait at most ``timeout`` s for the claim on its way, or asked, to land (or the ask
        to be declined); answers whether one was on its way or asked."""
        with self._changed:
            if not self._flying and not self.asked:
                return False
            answered = self._answered
            self._changed.wait_for(lambda: self._answered > answered, timeout)
            return True
