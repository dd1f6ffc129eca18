"""webhook(): signed deliveries to a real HTTP server on loopback, the ledger, auto-disable,
no redirect, and the destination guard (by a stubbed resolver: nothing connects to a refused
address)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import socket
import threading

import httpx
import pytest
import standardwebhooks

from tests.webhooks import hooks
from ultimat3_jobs.errors import WebhookEndpointInvalid, WebhookEndpointNotFound
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.models import Job, WebhookDelivery, WebhookEndpoint
from ultimat3_jobs.testing import run_enqueued
from ultimat3_jobs.webhooks import guard, ledger

pytestmark = pytest.mark.django_db(transaction=True)


def independent_signature(secret: str, msg_id: str, timestamp: str, body: bytes) -> str:
    key = base64.b64decode(secret.split("_", 1)[1])
    mac = hmac.new(key, msg_id.encode() + b"." + timestamp.encode() + b"." + body, hashlib.sha256)
    return "v1," + base64.b64encode(mac.digest()).decode()


def ledger_of(name):
    return list(
        WebhookDelivery.objects.filter(endpoint__name=name)
        .order_by("id")
        .values_list("status", "response_code", "attempt")
    )


def test_a_delivery_is_signed_as_standard_webhooks_says(http_server, loopback_allowed):
    endpoint = ledger.add_endpoint("shop", http_server.url())
    sent = hooks.order_paid.send({"order": 7, "total": "12.50"}, endpoint="shop")
    summary = run_enqueued()
    assert summary.completed == (sent.id,), str(summary)
    [request] = http_server.script.received
    headers = request.headers
    assert headers["webhook-id"] == f"msg_{sent.id.hex}"
    assert headers["content-type"] == "application/json"
    assert headers["host"] == f"127.0.0.1:{http_server.port}"
    expected = independent_signature(
        endpoint.secret, headers["webhook-id"], headers["webhook-timestamp"], request.body
    )
    assert headers["webhook-signature"] == expected
    # The reference implementation agrees, and answers the event.
    event = standardwebhooks.Webhook(endpoint.secret).verify(request.body, headers)
    assert event["type"] == "order.paid"
    assert event["data"] == {"order": 7, "total": "12.50"}
    assert ledger_of("shop") == [("succeeded", 200, 1)]
    assert Job.objects.get(id=sent.id).result["status"] == 200


def test_another_secret_does_not_verify(http_server, loopback_allowed):
    ledger.add_endpoint("shop", http_server.url())
    hooks.order_paid.send({"order": 1}, endpoint="shop")
    run_enqueued()
    [request] = http_server.script.received
    other = standardwebhooks.Webhook(base64.b64encode(b"x" * 32).decode())
    with pytest.raises(standardwebhooks.webhooks.WebhookVerificationError):
        other.verify(request.body, request.headers)


def test_a_500_then_a_200_leaves_two_ledger_rows_and_one_success(http_server, loopback_allowed):
    http_server.script.answers = [(500, {}, b"boom " * 400), (200, {}, b"ok")]
    ledger.add_endpoint("shop", http_server.url())
    sent = hooks.order_paid.send({"order": 8}, endpoint="shop")
    summary = run_enqueued()
    assert summary.retried == (sent.id,) and summary.completed == (sent.id,), str(summary)
    assert ledger_of("shop") == [("failed", 500, 1), ("succeeded", 200, 2)]
    failed = WebhookDelivery.objects.get(status="failed")
    assert failed.response_excerpt.startswith("boom ")
    assert len(failed.response_excerpt) == ledger.EXCERPT_LIMIT
    assert "answered 500" in failed.error
    # The retry carried the same id: the receiver can drop a duplicate.
    ids = {r.headers["webhook-id"] for r in http_server.script.received}
    assert len(ids) == 1 and len(http_server.script.received) == 2
    assert WebhookEndpoint.objects.get(name="shop").consecutive_failures == 0


def test_ten_consecutive_failures_disable_the_endpoint_and_no_eleventh_request(
    http_server, loopback_allowed
):
    http_server.script.answers = [(503, {}, b"down")]
    ledger.add_endpoint("shop", http_server.url())
    for n in range(10):
        hooks.order_paid_once.send({"n": n}, endpoint="shop")
        run_enqueued()
    endpoint = WebhookEndpoint.objects.get(name="shop")
    assert (endpoint.enabled, endpoint.consecutive_failures) == (False, 10)
    assert endpoint.disabled_at is not None
    assert "10 consecutive failures" in endpoint.disabled_reason
    assert len(http_server.script.received) == 10
    eleventh = hooks.order_paid_once.send({"n": 11}, endpoint="shop")
    summary = run_enqueued()
    assert summary.failed == (eleventh.id,)
    assert len(http_server.script.received) == 10
    assert "X_WEBHOOK_ENDPOINT_DISABLED" in summary.errors[eleventh.id].message
    assert ledger_of("shop")[-1] == ("refused", None, 1)
    assert len(ledger_of("shop")) == 11
    # The operator's verb enables it again; the next delivery is sent.
    assert ledger.enable("shop") is True
    http_server.script.answers = [(204, {}, b"")]
    again = hooks.order_paid_once.send({"n": 12}, endpoint="shop")
    assert run_enqueued().completed == (again.id,)
    assert len(http_server.script.received) == 11


def test_a_success_resets_the_count_of_consecutive_failures(http_server, loopback_allowed):
    http_server.script.answers = [(500, {}, b""), (500, {}, b""), (200, {}, b"")]
    ledger.add_endpoint("shop", http_server.url())
    for n in range(2):
        hooks.order_paid_once.send({"n": n}, endpoint="shop")
        run_enqueued()
    assert WebhookEndpoint.objects.get(name="shop").consecutive_failures == 2
    hooks.order_paid_once.send({"n": 3}, endpoint="shop")
    run_enqueued()
    assert WebhookEndpoint.objects.get(name="shop").consecutive_failures == 0


def test_a_redirect_is_not_followed(http_server, loopback_allowed):
    elsewhere = http_server.url("/elsewhere")
    http_server.script.answers = [(302, {"location": elsewhere}, b"")]
    ledger.add_endpoint("shop", http_server.url())
    sent = hooks.order_paid_once.send({"order": 9}, endpoint="shop")
    summary = run_enqueued()
    assert summary.failed == (sent.id,)
    assert [r.path for r in http_server.script.received] == ["/hook"]
    assert ledger_of("shop") == [("failed", 302, 1)]
    assert "X_WEBHOOK_DELIVERY_FAILED" in summary.errors[sent.id].message


def test_an_unreachable_endpoint_is_a_failed_attempt_in_the_ledger(loopback_allowed):
    with socket_bound() as port:
        ledger.add_endpoint("gone", f"http://127.0.0.1:{port}/hook")
        sent = hooks.order_paid_once.send({"order": 10}, endpoint="gone")
        summary = run_enqueued()
    assert summary.failed == (sent.id,)
    [row] = WebhookDelivery.objects.all()
    assert (row.status, row.response_code) == ("failed", None)
    assert "could not be reached" in row.error


class socket_bound:
    """A loopback port bound and not listening: a connection to it is refused."""

    def __enter__(self) -> int:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        return int(self.sock.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        self.sock.close()


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("169.254.169.254", "metadata"),
        ("::1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("192.168.1.1", "private"),
        ("fe80::1", "link-local"),
    ],
)
def test_a_name_resolving_to_a_refused_address_is_never_connected(monkeypatch, address, why):
    asked = []

    def stub_resolver(host, port):
        asked.append((host, port))
        return [address]

    def no_client(*args, **kwargs):
        raise AssertionError("a connection was attempted")

    monkeypatch.setattr(guard, "resolve_host", stub_resolver)
    monkeypatch.setattr(httpx, "Client", no_client)
    ledger.add_endpoint("internal", "https://hooks.example.com/in")
    sent = hooks.order_paid.send({"order": 11}, endpoint="internal")
    summary = run_enqueued()
    assert asked == [("hooks.example.com", 443)]
    assert summary.failed == (sent.id,), "refused at once, never retried"
    message = summary.errors[sent.id].message
    assert "X_WEBHOOK_DESTINATION_REFUSED" in message and why in message
    assert ledger_of("internal") == [("refused", None, 1)]
    # A refusal is not the endpoint's failure: it stays enabled.
    assert WebhookEndpoint.objects.get(name="internal").consecutive_failures == 0


def test_an_allowed_network_lets_a_private_address_through(settings):
    settings.ULTIMAT3_JOBS = {**settings.ULTIMAT3_JOBS, "WEBHOOK_ALLOWED_NETWORKS": ["10.0.0.0/8"]}
    assert guard.refusal(guard.ipaddress.ip_address("10.9.9.9"), ["10.0.0.0/8"]) is None
    assert guard.refusal(guard.ipaddress.ip_address("11.0.0.1"), []) is None
    assert guard.refusal(guard.ipaddress.ip_address("100.100.100.200"), []) is not None


def test_tenants_must_agree(http_server, loopback_allowed):
    ledger.add_endpoint("acme-hook", http_server.url(), tenant_id="acme")
    mine = hooks.org_event.send({"x": 1}, endpoint="acme-hook", org_id="acme")
    theirs = hooks.org_event.send({"x": 2}, endpoint="acme-hook", org_id="globex")
    summary = run_enqueued()
    assert summary.completed == (mine.id,)
    assert summary.failed == (theirs.id,)
    assert "X_JOB_TENANT_MISMATCH" in summary.errors[theirs.id].message
    assert len(http_server.script.received) == 1
    # The run's tenant must also be the input's.
    ctx = JobContext.for_direct_call(hooks.org_event.name, tenant_id="globex")
    with pytest.raises(Exception, match="X_JOB_TENANT_MISMATCH"):
        hooks.org_event.job(ctx, data={}, endpoint="acme-hook", org_id="acme")
    assert len(http_server.script.received) == 1


def test_a_rotated_secret_signs_beside_the_old_one(http_server, loopback_allowed):
    old = ledger.add_endpoint("shop", http_server.url()).secret
    new = ledger.rotate_secret("shop").secret
    assert new != old
    hooks.order_paid.send({"order": 12}, endpoint="shop")
    run_enqueued()
    [request] = http_server.script.received
    assert len(request.headers["webhook-signature"].split(" ")) == 2
    for secret in (old, new):
        standardwebhooks.Webhook(secret).verify(request.body, request.headers)


def test_a_cancelled_attempt_leaves_no_ledger_row(http_server, loopback_allowed):
    ledger.add_endpoint("shop", http_server.url())
    ctx = JobContext.for_direct_call(hooks.order_paid.name, cancelled=threading.Event())
    ctx.cancelled.set()
    with pytest.raises(Exception, match="X_ABORTED"):
        hooks.order_paid.job(ctx, data={}, endpoint="shop")
    assert WebhookDelivery.objects.count() == 0


def test_a_fixed_endpoint_and_an_unknown_one(http_server, loopback_allowed):
    ledger.add_endpoint("fixed", http_server.url())
    sent = hooks.fixed.send({"ping": True})
    assert run_enqueued().completed == (sent.id,)
    body = json.loads(http_server.script.received[0].body)
    assert body["type"] == "fixed.ping" and body["data"] == {"ping": True}
    lost = hooks.order_paid.send({}, endpoint="nobody")
    summary = run_enqueued()
    assert summary.failed == (lost.id,)
    assert "X_WEBHOOK_ENDPOINT_NOT_FOUND" in summary.errors[lost.id].message


@pytest.mark.parametrize(
    ("name", "url"),
    [
        ("Bad Name", "https://example.com/"),
        ("ok", "ftp://example.com/"),
        ("ok", "https://user:pw@example.com/"),
        ("ok", "/relative"),
    ],
)
def test_an_endpoint_is_checked_when_added(name, url):
    with pytest.raises(WebhookEndpointInvalid):
        ledger.add_endpoint(name, url)
    with pytest.raises(WebhookEndpointNotFound):
        ledger.enable("ok")


def test_the_guard_answers_the_checked_address_not_the_name(monkeypatch):
    monkeypatch.setattr(guard, "resolve_host", lambda host, port: ["93.184.215.14"])
    where = guard.destination("https://hooks.example.com:8443/in?x=1", [])
    assert where.url == "https://93.184.215.14:8443/in?x=1"
    assert (where.host, where.host_header) == ("hooks.example.com", "hooks.example.com:8443")
