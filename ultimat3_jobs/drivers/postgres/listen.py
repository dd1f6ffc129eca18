"""``QueueListener``: enqueue wakes over PostgreSQL ``LISTEN``/``NOTIFY``.

The listener holds its own psycopg connection, outside Django's per-thread connections, because it
sits idle in ``LISTEN`` for the life of the process. It counts as live only once a probe sent from
another session has come back on that connection: a transaction-pooling proxy accepts ``LISTEN``
and then delivers nothing, and a session's own notifications reach it even through such a proxy.

A callback runs on the listener's thread between two waits, and may run statements on that
connection (:func:`thread_session`): the wake's claim does (``notified.py``), saving a second
connection, Django's cursor and, since the connection is a proven session of its own, the
statement's planning (prepared once per connection).
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any

import psycopg
from django.db import connections
from psycopg import sql

from ultimat3_jobs.drivers.common import call_on_wake

logger = logging.getLogger("ultimat3_jobs.wake")

LISTEN_APPLICATION_NAME = "ultimat3_jobs.listen"
PROBE_APPLICATION_NAME = "ultimat3_jobs.probe"

POLL_SECONDS = 0.25
"""How long one wait for notifications lasts at most (:meth:`QueueListener.close` cuts it
short)."""

PROBE_TIMEOUT_SECONDS = 5.0
PROBE_RETRY_SECONDS = 30.0
BACKOFF_MIN_SECONDS = 0.2
BACKOFF_MAX_SECONDS = 5.0
CONNECT_TIMEOUT_SECONDS = 10
JOIN_SECONDS = POLL_SECONDS + 1.0


class _Session(threading.local):
    """The connection a listener's thread serves notifications on, while it does."""

    conn: psycopg.Connection[Any] | None = None


_session = _Session()


def thread_session() -> psycopg.Connection[Any] | None:
    """The listening connection, for a callback that runs on its listener's thread once the
    probe proved it a session of its own (autocommit, server-side binding, the time zone of
    Django's connections); ``None`` before that, and on any other thread.
    Statements on it run between two waits for notifications; a notification that comes
    meanwhile is kept for the next."""
    return _session.conn


# Keys Django adds for its own cursors and adapters; this connection runs LISTEN and nothing else.
_DJANGO_ONLY_PARAMS = ("cursor_factory", "context", "row_factory")
# Without keepalives a peer that vanished without a reset would leave the wait blocked for good.
_KEEPALIVE_DEFAULTS: dict[str, Any] = {
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}


def connection_params(alias: str, application_name: str) -> dict[str, Any]:
    """What ``psycopg.connect`` needs to reach the database of Django alias ``alias``, as a
    session of its own named ``application_name``."""
    params = dict(connections[alias].get_connection_params())
    for key in _DJANGO_ONLY_PARAMS:
        params.pop(key, None)
    for key, value in _KEEPALIVE_DEFAULTS.items():
        params.setdefault(key, value)
    params.setdefault("connect_timeout", CONNECT_TIMEOUT_SECONDS)
    params["application_name"] = application_name
    return params


class QueueListener:
    """A :class:`~ultimat3_jobs.drivers.base.WakeSubscription` on PostgreSQL: a daemon thread
    that listens on ``channel`` and calls ``on_wake(payload)`` for each notification there,
    reconnecting with backoff whenever the connection fails. It proves each connection on
    ``<channel>_probe`` with a token of its own."""

    def __init__(self, *, database: str, channel: str, on_wake: Callable[[str], None]) -> None:
        self.database = database
        self.channel = channel
        self.probe_channel = f"{channel}_probe"
        self._on_wake = on_wake
        self._delay = BACKOFF_MIN_SECONDS
        self._listen_params = connection_params(database, LISTEN_APPLICATION_NAME)
        # Django turns psycopg's preparation off (None) unless the alias asks, for the sake of
        # transaction-pooling proxies; nothing is prepared on this connection before its probe
        # proves it a session of its own (thread_session), and then only what asks to be.
        self._listen_params.pop("prepare_threshold", None)
        # One round trip at each connect: both LISTENs, and the time zone Django's own
        # connections set, so that a claim run on this one reads timestamps as theirs do.
        self._setup = sql.SQL("LISTEN {}; LISTEN {}; SET TIME ZONE {}").format(
            sql.Identifier(channel),
            sql.Identifier(self.probe_channel),
            sql.Literal(connections[database].timezone_name),
        )
        self._probe_params = connection_params(database, PROBE_APPLICATION_NAME)
        self._stop = threading.Event()
        self._live = threading.Event()
        # Held while on_wake runs, so close() returns only once no call is in flight; reentrant
        # so that on_wake may itself close the subscription.
        self._deliver_lock = threading.RLock()
        self._closed = False
        # The thread's wait for notifications also watches the reading end of a socket pair;
        # close() writes to its other end, so that stopping never waits out a poll.
        self._interrupt_lock = threading.Lock()
        self._interrupt_reader: socket.socket | None = None
        self._interrupt_writer: socket.socket | None = None
        self._thread = threading.Thread(target=self._run, name=LISTEN_APPLICATION_NAME, daemon=True)

    @property
    def thread(self) -> threading.Thread:
        """The listening thread (for checks and tests)."""
        return self._thread

    def start(self) -> None:
        """Start listening in the background; answers at once, before the listener is live."""
        self._thread.start()

    def is_live(self) -> bool:
        """Whether a probe came back on the current connection since it was opened."""
        return self._live.is_set() and not self._stop.is_set()

    def close(self) -> None:
        """Stop the thread and close its connection; no ``on_wake`` call follows."""
        self._stop.set()
        with self._deliver_lock:
            self._closed = True
        self._live.clear()
        with self._interrupt_lock:
            if self._interrupt_writer is not None:
                # Full or failing: the thread is awake already, or gone.
                with contextlib.suppress(OSError):
                    self._interrupt_writer.send(b"\0")
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=JOIN_SECONDS)

    # -- the thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        reader, writer = socket.socketpair()
        for end in (reader, writer):
            end.setblocking(False)
        with self._interrupt_lock:
            self._interrupt_reader, self._interrupt_writer = reader, writer
        try:
            self._listen()
        finally:
            # A Django connection a callback opened on this thread.
            with contextlib.suppress(Exception):
                connections[self.database].close()
            with self._interrupt_lock:
                self._interrupt_reader = self._interrupt_writer = None
            for end in (reader, writer):
                end.close()

    def _listen(self) -> None:
        loud = True
        while not self._stop.is_set():
            conn: psycopg.Connection[Any] | None = None
            try:
                conn = psycopg.connect(**self._listen_params, autocommit=True)
                conn.execute(self._setup, prepare=False)
                loud = True
                self._serve(conn)
            except Exception as exc:
                # One warning per outage; the retries that fail after it log at debug.
                self._lost(exc, loud=loud)
                loud = False
            finally:
                self._live.clear()
                if conn is not None:
                    _close_quietly(conn)
            if self._stop.wait(self._delay):
                break
            self._delay = min(self._delay * 2, BACKOFF_MAX_SECONDS)

    def _serve(self, conn: psycopg.Connection[Any]) -> None:
        """Probe, then deliver notifications until stopped or until the connection fails
        (raises)."""
        with selectors.DefaultSelector() as arrivals:
            arrivals.register(conn.fileno(), selectors.EVENT_READ)
            if self._interrupt_reader is not None:
                arrivals.register(self._interrupt_reader, selectors.EVENT_READ)
            try:
                self._serve_until_stopped(conn, arrivals)
            finally:
                _session.conn = None

    def _serve_until_stopped(
        self, conn: psycopg.Connection[Any], arrivals: selectors.BaseSelector
    ) -> None:
        # A probe that comes back late, after a newer one was sent, still proves the path.
        tokens: deque[str] = deque(maxlen=8)
        proven = False
        warned = False
        probe_deadline = self._probe(tokens, PROBE_TIMEOUT_SECONDS)
        while not self._stop.is_set():
            # What arrived (and what psycopg kept back), without waiting: the wait is below.
            # Read whole before any is delivered: the reading holds the connection's lock,
            # which a callback's statement on it (thread_session) takes.
            arrived = list(conn.notifies(timeout=0))
            for notify in arrived:
                if notify.channel == self.channel:
                    self._deliver(notify.payload)
                elif (
                    not proven and notify.channel == self.probe_channel and notify.payload in tokens
                ):
                    proven = True
                    self._became_live(conn)
                if self._stop.is_set():
                    break
            if not proven and time.monotonic() >= probe_deadline:
                if not warned:
                    warned = True
                    logger.warning(
                        "jobs.wake.unproven: LISTEN on %r was accepted but a probe did not come "
                        "back within %.0f s (a transaction-pooling proxy?); workers will poll",
                        self.database,
                        PROBE_TIMEOUT_SECONDS,
                        extra={"event": "jobs.wake.unproven", "database": self.database},
                    )
                probe_deadline = self._probe(tokens, PROBE_RETRY_SECONDS)
            # Until the server sends something, close() interrupts, or a poll passed; not when
            # some arrived: a callback's statement may have read more, which psycopg kept back.
            if not arrived:
                arrivals.select(POLL_SECONDS)

    def _became_live(self, conn: psycopg.Connection[Any]) -> None:
        self._delay = BACKOFF_MIN_SECONDS
        _session.conn = conn  # a session of its own: what it prepares stays
        self._live.set()
        logger.info(
            "jobs.wake.live: listening for enqueue wakes on %r (backend %s)",
            self.database,
            conn.info.backend_pid,
            extra={"event": "jobs.wake.live", "database": self.database},
        )

    def _probe(self, tokens: deque[str], wait_seconds: float) -> float:
        """Send a probe from a separate session; answers until when to wait for it."""
        token = uuid.uuid4().hex
        tokens.append(token)
        with psycopg.connect(**self._probe_params, autocommit=True) as probe:
            probe.execute("select pg_notify(%s, %s)", (self.probe_channel, token))
        return time.monotonic() + wait_seconds

    def _deliver(self, queue: str) -> None:
        with self._deliver_lock:
            if self._closed:
                return
            call_on_wake(self._on_wake, queue)

    def _lost(self, exc: Exception, *, loud: bool) -> None:
        if self._stop.is_set():
            return
        logger.log(
            logging.WARNING if loud else logging.DEBUG,
            "jobs.wake.lost: the wake connection to %r failed (%s: %s); retrying in %.1f s, "
            "workers poll meanwhile",
            self.database,
            type(exc).__name__,
            exc,
            self._delay,
            extra={"event": "jobs.wake.lost", "database": self.database},
        )


def _close_quietly(conn: psycopg.Connection[Any]) -> None:
    try:
        conn.close()
    except Exception:
        logger.debug("closing the wake connection failed", exc_info=True)
