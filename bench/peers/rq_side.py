"""RQ's side, run by the interpreter of its throw-away virtualenv.

    python -m bench.peers.rq_side enqueue|latency --dsn REDIS_URL [...]
    rq worker --url REDIS_URL ...

A batch is one ``Queue.enqueue_many`` call (one pipeline); the functions run in RQ's work horse,
which its default worker forks for every job, as RQ is documented to run.
"""

from __future__ import annotations

import sys
import time

from redis import Redis
from rq import Queue

from bench.peers.common import parse, send_stamp, serve

MODULE = "bench.peers.rq_side"
"""The functions are named by this path: run as ``python -m``, this module is ``__main__``,
which an RQ worker cannot import."""


def noop() -> None:
    """Does nothing."""


def stamp(tag: int, port: int) -> None:
    started = time.time()
    send_stamp(port, tag, started)


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    queue = Queue(connection=Redis.from_url(options.dsn))

    def enqueue_batch(size: int) -> None:
        queue.enqueue_many([Queue.prepare_data(noop, result_ttl=600) for _ in range(size)])

    def enqueue_one(tag: int, port: int) -> None:
        queue.enqueue(f"{MODULE}.stamp", tag, port)

    return serve(options, enqueue_batch, enqueue_one)


if __name__ == "__main__":
    sys.exit(main())
