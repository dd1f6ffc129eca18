"""A real HTTP server on loopback, scripted per test, that records every request it gets."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Script:
    """Answers (status, extra headers, body) in order; the last one repeats."""

    answers: list[tuple[int, dict[str, str], bytes]] = field(
        default_factory=lambda: [(200, {}, b"ok")]
    )
    received: list[Received] = field(default_factory=list)

    def answer(self) -> tuple[int, dict[str, str], bytes]:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


class Handler(BaseHTTPRequestHandler):
    script: Script

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        self.script.received.append(
            Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        )
        status, headers, payload = self.script.answer()
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_POST = _serve
    do_GET = _serve

    def log_message(self, format: str, *args: object) -> None:
        pass


@dataclass
class Server:
    host: str
    port: int
    script: Script

    def url(self, path: str = "/hook") -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{path}"


def _serve(host: str) -> Iterator[Server]:
    script = Script()
    handler = type("ScriptedHandler", (Handler,), {"script": script})
    server_class = ThreadingHTTPServer
    if ":" in host:
        server_class = type("Server6", (ThreadingHTTPServer,), {"address_family": 10})
    httpd = server_class((host, 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield Server(host, httpd.server_address[1], script)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture
def http_server() -> Iterator[Server]:
    yield from _serve("127.0.0.1")


@pytest.fixture
def loopback_allowed(settings):
    settings.ULTIMAT3_JOBS = {
        **settings.ULTIMAT3_JOBS,
        "WEBHOOK_ALLOWED_NETWORKS": ["127.0.0.1/32"],
        "WEBHOOK_DISABLE_AFTER_FAILURES": 10,
        "WEBHOOK_CONNECT_TIMEOUT_SECONDS": 2,
        "WEBHOOK_READ_TIMEOUT_SECONDS": 5,
    }
