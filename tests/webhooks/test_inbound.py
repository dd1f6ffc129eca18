"""webhook_receiver(): bounded read, verify before parse, bounded event id, enqueue before the
2xx (a replay makes no new job; a store that cannot take it answers 503), a sensitive payload.
Through Django's test client, and through a real HTTP server socket on loopback."""

from __future__ import annotations

import io
import json
import time
from datetime import UTC, datetime, timedelta
from io import StringIO

import httpx
import pytest
import standardwebhooks
from django.core.management import call_command
from django.http.request import RawPostDataException
from django.test import Client

from tests.admin.conftest import make_user
from tests.webhooks import receivers
from ultimat3_jobs import job
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.errors import DriverUnavailable, JobDeclarationInvalid
from ultimat3_jobs.models import Job
from ultimat3_jobs.operator.redaction import REDACTED, disclosure
from ultimat3_jobs.testing import run_enqueued
from ultimat3_jobs.webhooks import (
    ReceivedEvent,
    standard_webhooks_verify,
    webhook_receiver,
)
from ultimat3_jobs.webhooks.inbound import read_within

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.webhooks.receivers_admin")]

URL = "/webhooks/shop/"


def signed(
    payload: object = None,
    *,
    msg_id: str = "msg_1",
    secret: str = receivers.SECRET,
    at: datetime | None = None,
    body: bytes | None = None,
) -> tuple[bytes, dict[str, str]]:
    """A delivery signed by the reference implementation: its body and headers."""
    if body is None:
        body = json.dumps({"type": "order.paid", "data": payload or {"n": 1}}).encode()
    at = at or datetime.now(UTC)
    signature = standardwebhooks.Webhook(secret).sign(msg_id, at, body.decode())
    return body, {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature,
    }


def post(client, body: bytes, headers: dict[str, str], url: str = URL):
    return client.post(url, data=body, content_type="application/json", headers=headers)


def jobs() -> list[Job]:
    return list(Job.objects.filter(name="tests.wh.received"))


def test_a_signed_delivery_is_enqueued_with_its_key(client):
    body, headers = signed({"order": 5}, msg_id="msg_abc")
    answer = post(client, body, headers)
    assert answer.status_code == 200 and answer.json() == {"status": "accepted"}
    [row] = jobs()
    assert row.idempotency_key == "webhook:shop:msg_abc"
    assert row.input == {"event_id": "msg_abc", "payload": json.loads(body)}


def test_the_same_delivery_twice_makes_one_job_even_after_it_ran(client):
    body, headers = signed(msg_id="msg_twice")
    assert post(client, body, headers).json() == {"status": "accepted"}
    assert post(client, body, headers).json() == {"status": "duplicate"}
    run_enqueued()
    assert receivers.HANDLED[-1][0] == "msg_twice"
    # A retry signed again later (a new timestamp) is still the same event.
    body, headers = signed(msg_id="msg_twice", at=datetime.now(UTC) + timedelta(seconds=30))
    answer = post(client, body, headers)
    assert (answer.status_code, answer.json()) == (200, {"status": "duplicate"})
    assert len(jobs()) == 1


def test_a_rotated_secret_is_still_accepted(client):
    body, headers = signed(msg_id="msg_old", secret=receivers.OLD_SECRET)
    assert post(client, body, headers).status_code == 200


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda: signed(secret="whsec_" + "A" * 44), id="wrong-secret"),
        pytest.param(
            lambda: (signed()[0], {k: v for k, v in signed()[1].items() if k != "webhook-id"}),
            id="missing-id",
        ),
        pytest.param(
            lambda: (
                signed()[0],
                {k: v for k, v in signed()[1].items() if k != "webhook-signature"},
            ),
            id="missing-signature",
        ),
        pytest.param(
            lambda: signed(at=datetime.now(UTC) - timedelta(minutes=6)), id="six-minutes-old"
        ),
        pytest.param(
            lambda: signed(at=datetime.now(UTC) + timedelta(minutes=6)), id="six-minutes-ahead"
        ),
        pytest.param(
            lambda: (b'{"tampered": true}', signed()[1]),
            id="body-changed",
        ),
    ],
)
def test_a_bad_missing_or_stale_signature_is_401_and_enqueues_nothing(client, spoil):
    body, headers = spoil()
    answer = post(client, body, headers)
    assert answer.status_code == 401
    assert answer.json()["code"] == "X_WEBHOOK_SIGNATURE_INVALID"
    assert jobs() == []


def test_a_300_character_event_id_is_422(client):
    body, headers = signed(msg_id="m" * 300)
    answer = post(client, body, headers)
    assert (answer.status_code, answer.json()["code"]) == (422, "X_WEBHOOK_EVENT_ID_INVALID")
    body, headers = signed(msg_id="bad id/../x")
    assert post(client, body, headers).status_code == 422
    assert jobs() == []


def test_a_verified_body_that_is_not_json_is_400(client):
    body, headers = signed(body=b"not json")
    answer = post(client, body, headers)
    assert (answer.status_code, answer.json()["code"]) == (400, "X_WEBHOOK_PAYLOAD_INVALID")
    assert jobs() == []


def test_a_10_mb_body_is_413_and_nothing_is_enqueued(client):
    body, headers = signed(body=b"x" * (10 * 2**20))
    answer = post(client, body, headers)
    assert (answer.status_code, answer.json()["code"]) == (413, "X_WEBHOOK_BODY_TOO_LARGE")
    assert jobs() == []
    small = post(client, *signed(body=b"y" * 101), url="/webhooks/small/")
    assert small.status_code == 413


class CountingStream(io.RawIOBase):
    """An endless body that counts what is read of it."""

    def __init__(self) -> None:
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        self.read_bytes += len(buffer)
        buffer[:] = b"x" * len(buffer)
        return len(buffer)


def test_the_bounded_read_stops_past_max_bytes_without_a_content_length(rf):
    request = rf.post(URL, data=b"", content_type="application/json")
    stream = CountingStream()
    request._stream = stream
    request.META.pop("CONTENT_LENGTH", None)
    with pytest.raises(Exception, match="X_WEBHOOK_BODY_TOO_LARGE"):
        read_within(request, 2**20)
    assert 2**20 < stream.read_bytes <= 2**20 + 64 * 1024
    # A declared length over the limit is refused before a byte is read.
    declared = rf.post(URL, data=b"", content_type="application/json")
    declared._stream = counted = CountingStream()
    declared.META["CONTENT_LENGTH"] = str(10 * 2**20)
    with pytest.raises(Exception, match="X_WEBHOOK_BODY_TOO_LARGE"):
        read_within(declared, 2**20)
    assert counted.read_bytes == 0


def test_the_job_store_down_is_503_so_the_sender_retries(client, monkeypatch):
    driver = get_driver()

    def down(**kwargs):
        raise DriverUnavailable("the job store cannot be reached")

    monkeypatch.setattr(driver, "job_enqueue", down)
    body, headers = signed(msg_id="msg_down")
    answer = post(client, body, headers)
    assert answer.status_code == 503 and answer["Retry-After"]
    monkeypatch.undo()
    assert jobs() == []
    assert post(client, body, headers).json() == {"status": "accepted"}


def test_only_post_is_answered(client):
    assert client.get(URL).status_code == 405


def test_the_stored_payload_is_redacted_for_an_operator(client):
    body, headers = signed({"card": "4242"}, msg_id="msg_secret")
    post(client, body, headers)
    [row] = jobs()
    shown = disclosure("tests.wh.received", reveal=False).payload(row.input)
    assert shown == {"event_id": "msg_secret", "payload": REDACTED}


def test_a_receiver_is_checked_when_declared():
    def verify(headers, body):
        return ReceivedEvent("x", None)

    with pytest.raises(JobDeclarationInvalid, match="sensitive"):
        webhook_receiver("plain", verify=verify, handle_job=_plain_job)
    with pytest.raises(JobDeclarationInvalid, match="name"):
        webhook_receiver("Bad Name", verify=verify, handle_job=receivers.received)
    with pytest.raises(JobDeclarationInvalid, match="max_bytes"):
        webhook_receiver("big", verify=verify, handle_job=receivers.received, max_bytes=0)
    with pytest.raises(JobDeclarationInvalid, match="another job"):
        webhook_receiver("shop", verify=verify, handle_job=_other_job)
    assert callable(standard_webhooks_verify("whsec_" + "A" * 44))


def _plain(ctx, *, event_id: str, payload: object) -> None:
    pass


_plain_job = job(name="tests.wh.plain", tenant="none")(_plain)
_other_job = job(name="tests.wh.other", tenant="none", sensitive=["payload"])(_plain)


@pytest.mark.django_db(transaction=True)
def test_through_a_real_server_socket(live_server):
    url = f"{live_server.url}{URL}"
    assert url.startswith("http://localhost:") or url.startswith("http://127.0.0.1:")
    body, headers = signed({"over": "tcp"}, msg_id="msg_tcp")
    with httpx.Client(trust_env=False, timeout=10) as http:
        assert http.post(url, content=body, headers=headers).json() == {"status": "accepted"}
        assert http.post(url, content=body, headers=headers).json() == {"status": "duplicate"}
        stale = signed(msg_id="msg_stale", at=datetime.now(UTC) - timedelta(minutes=6))
        assert http.post(url, content=stale[0], headers=stale[1]).status_code == 401
        started = time.monotonic()
        big = http.post(url, content=b"x" * (10 * 2**20), headers=headers)
        assert big.status_code == 413
        assert time.monotonic() - started < 10
    assert [j.input["event_id"] for j in jobs()] == ["msg_tcp"]


def test_the_view_reads_the_stream_and_never_request_body(rf):
    body, headers = signed(msg_id="msg_stream")
    request = rf.post(URL, data=body, content_type="application/json", headers=headers)
    answer = receivers.shop(request)
    assert answer.status_code == 200
    # The body was read from the stream: Django never built request.body (and now cannot).
    assert not hasattr(request, "_body")
    with pytest.raises(RawPostDataException):
        request.body  # noqa: B018


def test_a_received_payload_is_redacted_in_the_admin_and_the_cli(client):
    body, headers = signed({"card": "4242-4242-4242-4242"}, msg_id="msg_card")
    assert post(client, body, headers).status_code == 200
    [row] = jobs()
    viewer = Client()
    viewer.force_login(make_user("viewer", staff=True, perms=["view_job"]))
    page = viewer.get(f"/admin/ultimat3_jobs/job/{row.id}/change/")
    assert page.status_code == 200 and b"msg_card" in page.content
    assert b"4242" not in page.content
    shown = StringIO()
    call_command("jobs", "show", str(row.id), "--json", stdout=shown)
    assert "msg_card" in shown.getvalue() and "4242" not in shown.getvalue()
