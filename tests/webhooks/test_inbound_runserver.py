"""webhook_receiver() behind a real ``manage.py runserver`` subprocess, on a free loopback port:
the bytes the application read of each body are counted by the server's WSGI application
(``tests/webhooks/counting.py``), the jobs are read from the test database the server writes
to, and a second server whose job store is a closed port answers 503.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tests.settings_webhooks import WEBHOOK_SERVER_APPLICATION_NAME
from tests.support.processes import ManagedProcess, ProcessGroup, owned
from tests.webhooks.test_inbound import signed
from ultimat3_jobs.models import Job

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

MAX_BYTES = 1_000_000
"""The ``shop`` receiver's ``max_bytes`` (tests/webhooks/receivers.py)."""
CHUNK = 64 * 1024


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Servers(ProcessGroup):
    """``runserver`` subprocesses on the test database (``tests.settings_webhooks``)."""

    def __init__(self, tmp_path: Path) -> None:
        super().__init__(
            tmp_path,
            settings="tests.settings_webhooks",
            sessions=(WEBHOOK_SERVER_APPLICATION_NAME,),
            database_env={"ULTIMAT3_WEBHOOK_DB_NAME": "default"},
            log_prefix="server-",
            started_marker="Quit the server with",
            what="servers",
        )

    def serve(self, name: str, **env: str) -> tuple[ManagedProcess, str]:
        """Start a server on a free loopback port; answer it and its base URL once it
        accepts connections."""
        port = free_port()
        process = self.command(
            name, "runserver", f"127.0.0.1:{port}", "--noreload", "--skip-checks", env=env
        )

        def accepts() -> bool:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            except OSError:
                return False
            return True

        self.wait(accepts, timeout=90, what=f"{name} accepting on 127.0.0.1:{port}", poll=0.1)
        return process, f"http://127.0.0.1:{port}"


@pytest.fixture
def servers(transactional_db: None, tmp_path: Path) -> Iterator[Servers]:
    yield from owned(Servers(tmp_path))


def body_read(servers: Servers, process: ManagedProcess, probe: str) -> int:
    """The bytes the application read of the request tagged ``?probe=<probe>``."""
    match = servers.wait_log(
        process, rf"^body-read /webhooks/shop/\?probe={re.escape(probe)} (\d+)$", timeout=60
    )
    return int(match.group(1))


def jobs() -> list[Job]:
    return list(Job.objects.filter(name="tests.wh.received").order_by("created_at"))


def test_a_runserver_socket_bounds_verifies_and_enqueues_once(servers: Servers) -> None:
    process, base = servers.serve("shop")

    def url(probe: str) -> str:
        return f"{base}/webhooks/shop/?probe={probe}"

    with httpx.Client(trust_env=False, timeout=60) as http:
        # A signed delivery: accepted, and its whole body was read (the counter counts).
        body, headers = signed({"over": "runserver"}, msg_id="msg_rs_1")
        answer = http.post(url("ok"), content=body, headers=headers)
        assert (answer.status_code, answer.json()) == (200, {"status": "accepted"})
        assert body_read(servers, process, "ok") == len(body)
        # The same delivery again: 200, and still one job.
        again = http.post(url("again"), content=body, headers=headers)
        assert (again.status_code, again.json()) == (200, {"status": "duplicate"})
        assert [job.idempotency_key for job in jobs()] == ["webhook:shop:msg_rs_1"]

        # 10 MB against max_bytes=1 MB: 413, and the application read at most about 1 MB.
        big, big_headers = signed(body=b"x" * (10 * 2**20), msg_id="msg_rs_big")
        answer = http.post(url("big"), content=big, headers=big_headers)
        assert (answer.status_code, answer.json()["code"]) == (413, "X_WEBHOOK_BODY_TOO_LARGE")
        assert body_read(servers, process, "big") <= MAX_BYTES + CHUNK

        # Wrong secret, a missing header, a timestamp 6 minutes old (or ahead): 401.
        spoiled = {
            "wrong-secret": signed(secret="whsec_" + "A" * 44, msg_id="msg_rs_bad"),
            "missing-signature": (
                body,
                {k: v for k, v in headers.items() if k != "webhook-signature"},
            ),
            "missing-timestamp": (
                body,
                {k: v for k, v in headers.items() if k != "webhook-timestamp"},
            ),
            "six-minutes-old": signed(
                msg_id="msg_rs_old", at=datetime.now(UTC) - timedelta(minutes=6)
            ),
            "six-minutes-ahead": signed(
                msg_id="msg_rs_ahead", at=datetime.now(UTC) + timedelta(minutes=6)
            ),
        }
        for probe, (spoiled_body, spoiled_headers) in spoiled.items():
            answer = http.post(url(probe), content=spoiled_body, headers=spoiled_headers)
            assert (answer.status_code, answer.json()["code"]) == (
                401,
                "X_WEBHOOK_SIGNATURE_INVALID",
            ), probe

        # A 300-character event id: 422.
        long_body, long_headers = signed(msg_id="m" * 300)
        answer = http.post(url("long-id"), content=long_body, headers=long_headers)
        assert (answer.status_code, answer.json()["code"]) == (422, "X_WEBHOOK_EVENT_ID_INVALID")

    # Nothing but the one accepted delivery was enqueued.
    assert [job.input["event_id"] for job in jobs()] == ["msg_rs_1"]


def test_a_runserver_whose_job_store_is_down_answers_503(servers: Servers) -> None:
    process, base = servers.serve("store-down", ULTIMAT3_WEBHOOK_STORE_PORT=str(free_port()))
    body, headers = signed({"n": 1}, msg_id="msg_rs_down")
    with httpx.Client(trust_env=False, timeout=60) as http:
        answer = http.post(f"{base}/webhooks/shop/?probe=down", content=body, headers=headers)
        assert answer.status_code == 503, answer.text
        assert answer.json()["code"] == "X_DRIVER_UNAVAILABLE"
        assert int(answer.headers["retry-after"]) > 0
        # Verified before the store was tried: a bad signature is still 401, not 503.
        bad = signed(secret="whsec_" + "A" * 44, msg_id="msg_rs_down")
        refused = http.post(f"{base}/webhooks/shop/?probe=bad", content=bad[0], headers=bad[1])
        assert refused.status_code == 401
    assert body_read(servers, process, "down") == len(body)
    assert jobs() == []
