"""An endpoint that accepts the request and never answers fails the attempt at the read timeout
(a ledger row, the failure counted); the receiving side's 5-minute tolerance holds both ways,
a timestamp too old and one too far in the future."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from tests.webhooks import hooks, receivers
from ultimat3_jobs.errors import WebhookSignatureInvalid
from ultimat3_jobs.models import WebhookDelivery, WebhookEndpoint
from ultimat3_jobs.testing import run_enqueued
from ultimat3_jobs.webhooks import ledger
from ultimat3_jobs.webhooks.signing import TOLERANCE_SECONDS, sign, verify


class SilentServer:
    """A loopback server that reads each request and never answers it (until released)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self.release = threading.Event()
        self.received: list[bytes] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.release.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(30)
                try:
                    self.received.append(conn.recv(65536))
                except OSError:
                    continue
                self.release.wait(60)

    def close(self) -> None:
        self.release.set()
        self.sock.close()
        self.thread.join(10)


@pytest.fixture
def silent_server() -> Iterator[SilentServer]:
    server = SilentServer()
    try:
        yield server
    finally:
        server.close()


@pytest.mark.django_db(transaction=True)
def test_an_endpoint_that_never_answers_fails_at_the_read_timeout(
    silent_server: SilentServer, loopback_allowed: None, settings
) -> None:
    settings.ULTIMAT3_JOBS = {**settings.ULTIMAT3_JOBS, "WEBHOOK_READ_TIMEOUT_SECONDS": 1}
    ledger.add_endpoint("silent", f"http://127.0.0.1:{silent_server.port}/hook")
    sent = hooks.order_paid_once.send({"order": 1}, endpoint="silent")
    summary = run_enqueued()
    assert summary.failed == (sent.id,), str(summary)
    assert "X_WEBHOOK_DELIVERY_FAILED" in summary.errors[sent.id].message
    # The request reached the server: the connection was made, the answer never came.
    assert len(silent_server.received) == 1
    assert silent_server.received[0].startswith(b"POST /hook ")
    [row] = WebhookDelivery.objects.all()
    assert (row.status, row.response_code) == ("failed", None)
    assert "ReadTimeout" in row.error
    assert row.duration_ms is not None and row.duration_ms >= 900
    assert WebhookEndpoint.objects.get(name="silent").consecutive_failures == 1


@pytest.mark.parametrize(
    ("offset", "accepted"),
    [
        (-TOLERANCE_SECONDS, True),
        (TOLERANCE_SECONDS, True),
        (-(TOLERANCE_SECONDS + 1), False),
        (TOLERANCE_SECONDS + 1, False),
        (-360, False),
        (360, False),
    ],
)
def test_the_tolerance_is_five_minutes_either_way(offset: int, accepted: bool) -> None:
    now = 1_900_000_000
    body = b'{"type": "order.paid"}'
    headers = sign([receivers.SECRET], "msg_edge", now + offset, body)
    if accepted:
        assert verify([receivers.SECRET], headers, body, now=now) == "msg_edge"
    else:
        with pytest.raises(WebhookSignatureInvalid, match="300 s from now"):
            verify([receivers.SECRET], headers, body, now=now)
