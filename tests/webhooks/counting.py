"""A WSGI application for the ``runserver`` tests: Django's, with each request's body stream
wrapped so that the bytes the application read are counted and printed once it answered
(``body-read <path>?<query> <bytes>``). The server's own draining of an unread body, after the
answer, is not counted: it reads the stream underneath."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

from django.core.wsgi import get_wsgi_application

_django = get_wsgi_application()


class CountingInput:
    """A ``wsgi.input`` that counts what is read through it."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.read_bytes = 0

    def _count(self, data: bytes) -> bytes:
        self.read_bytes += len(data)
        return data

    def read(self, size: int = -1) -> bytes:
        return self._count(self.stream.read(size))

    def readline(self, size: int = -1) -> bytes:
        return self._count(self.stream.readline(size))

    def readlines(self, hint: int = -1) -> list[bytes]:
        return [self._count(line) for line in self.stream.readlines(hint)]

    def __iter__(self) -> CountingInput:
        return self

    def __next__(self) -> bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    counter = CountingInput(environ["wsgi.input"])
    environ["wsgi.input"] = counter
    try:
        return _django(environ, start_response)
    finally:
        where = f"{environ.get('PATH_INFO', '')}?{environ.get('QUERY_STRING', '')}"
        print(f"body-read {where} {counter.read_bytes}", file=sys.stdout, flush=True)
