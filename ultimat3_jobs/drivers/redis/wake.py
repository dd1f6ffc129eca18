"""``RedisWake``: enqueue wakes over Redis pub/sub.

Every script that makes a job due now (enqueue, promote, requeue, fire) publishes its queue on
the store's wake channel, except a single enqueue when a worker is idle on its queue: that one
goes to the channel of that worker alone (``wake_one`` in ``lua/_lib.lua``), which a
subscription made for a worker listens to as well. When that worker listens for hands too, the
enqueue claims the job in its name and sends it whole on the worker's hand channel, so the
worker runs it without a claim of its own (``hand_to``); :class:`HandedOnce` drops the second
delivery of a hand, since a claim answers again what was handed but not yet claimed.

The subscription holds one connection of its own in ``SUBSCRIBE``, read by a daemon thread;
waiting there sends no command, so an idle worker's cost is its polls alone. It counts as live
only once a probe it published came back on that connection, and it reconnects with backoff
whenever the connection fails; the worker's poll stays the guarantee.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any

from redis import exceptions as redis_errors

from ultimat3_jobs.drivers.common import call_on_wake

logger = logging.getLogger("ultimat3_jobs.wake")

POLL_SECONDS = 0.25
"""How long one wait for a message lasts; :meth:`RedisWake.close` waits about this long."""

BACKOFF_MIN_SECONDS = 0.2
BACKOFF_MAX_SECONDS = 5.0
JOIN_SECONDS = POLL_SECONDS + 1.0


class RedisWake:
    """A :class:`~ultimat3_jobs.drivers.base.WakeSubscription` on Redis: calls
    ``on_wake(queue)`` for each message on ``channel`` (and on ``own_channel``, the worker's
    own, when given), from its own thread."""

    def __init__(
        self,
        client: Any,
        channel: str,
        on_wake: Callable[[str], None],
        *,
        own_channel: str | None = None,
        hand_channel: str | None = None,
        on_hand: Callable[[str], None] | None = None,
    ) -> None:
        self._client = client
        self.channel = channel
        self.probe_channel = f"{channel}:probe"
        self.hand_channel = hand_channel if on_hand is not None else None
        channels = (channel, own_channel, self.hand_channel, self.probe_channel)
        self._channels = [c for c in channels if c is not None]
        self._on_wake = on_wake
        self._on_hand = on_hand
        self._stop = threading.Event()
        self._live = threading.Event()
        # Held while on_wake runs, so close() returns only once no call is in flight; reentrant
        # so that on_wake may itself close the subscription.
        self._deliver_lock = threading.RLock()
        self._thread = threading.Thread(target=self._loop, name="jobs-wake-redis", daemon=True)
        self._thread.start()

    def is_live(self) -> bool:
        """Whether the probe of the current connection came back."""
        return self._live.is_set()

    def close(self) -> None:
        """Stop listening; no ``on_wake`` call follows."""
        self._stop.set()
        with self._deliver_lock:
            pass
        if self._thread is not threading.current_thread():
            self._thread.join(JOIN_SECONDS)

    def _loop(self) -> None:
        delay = BACKOFF_MIN_SECONDS
        while not self._stop.is_set():
            try:
                self._listen()
                delay = BACKOFF_MIN_SECONDS
            except (redis_errors.RedisError, OSError) as exc:
                self._live.clear()
                logger.warning(
                    "jobs.wake.lost: the Redis wake connection failed (%s: %s); retrying in "
                    "%.1fs, the poll carries on meanwhile",
                    type(exc).__name__,
                    exc,
                    delay,
                    extra={"event": "jobs.wake.lost"},
                )
                self._stop.wait(delay)
                delay = min(delay * 2, BACKOFF_MAX_SECONDS)
        self._live.clear()

    def _listen(self) -> None:
        pubsub = self._client.pubsub(ignore_subscribe_messages=True)
        try:
            pubsub.subscribe(*self._channels)
            token = uuid.uuid4().hex
            self._client.publish(self.probe_channel, token)
            while not self._stop.is_set():
                message = pubsub.get_message(timeout=POLL_SECONDS)
                if message is None or message.get("type") != "message":
                    continue
                data = message["data"]
                payload = data.decode("utf-8") if isinstance(data, bytes) else str(data)
                channel = message["channel"]
                channel = channel.decode("utf-8") if isinstance(channel, bytes) else channel
                if channel == self.probe_channel:
                    if payload == token:
                        self._live.set()
                    continue
                if channel == self.hand_channel:
                    self._deliver(payload, self._on_hand)  # type: ignore[arg-type]
                    continue
                self._deliver(payload, self._on_wake)
        finally:
            self._live.clear()
            pubsub.close()

    def _deliver(self, payload: str, to: Callable[[str], None]) -> None:
        with self._deliver_lock:
            if self._stop.is_set():
                return
            call_on_wake(to, payload)


HANDED_REMEMBERED = 4096
"""How many hands' tokens :class:`HandedOnce` holds while waiting for a second delivery: that
comes, if ever, at the worker's next claim (seconds), while hands come one per single enqueue."""


class HandedOnce:
    """The claim tokens of handed jobs delivered once: a hand reaches its worker by its message
    and again by the worker's next claim while it still runs it (a claim cannot know whether
    the message arrived), in either order; the first delivery passes, the second is dropped."""

    def __init__(self, size: int = HANDED_REMEMBERED) -> None:
        self._size = size
        self._seen: dict[str, None] = {}
        self._lock = threading.Lock()

    def first(self, token: str) -> bool:
        """Whether this is the first delivery of the hand with claim token ``token``."""
        with self._lock:
            if token in self._seen:
                del self._seen[token]
                return False
            self._seen[token] = None
            if len(self._seen) > self._size:
                del self._seen[next(iter(self._seen))]
            return True
