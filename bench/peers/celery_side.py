"""Celery's side, run by the interpreter of its throw-away virtualenv (Celery with its Redis
transport).

    python -m bench.peers.celery_side enqueue|latency --dsn REDIS_URL [...]
    celery -A bench.peers.celery_side worker ...   # broker URL in BENCH_PEER_DSN

Celery has no bulk publish: a batch is ``noop.delay()`` called once per job, as a user enqueues.
Results are ignored (no result backend), so a job costs the broker round trips alone.
"""

from __future__ import annotations

import os
import sys
import time

from celery import Celery

from bench.peers.common import parse, send_stamp, serve

DSN_VARIABLE = "BENCH_PEER_DSN"

app = Celery("bench", broker=os.environ.get(DSN_VARIABLE, "redis://127.0.0.1:6379/12"))
app.conf.update(task_ignore_result=True, worker_hijack_root_logger=False)


@app.task(name="noop")
def noop() -> None:
    """Does nothing."""


@app.task(name="stamp")
def stamp(tag: int, port: int) -> None:
    started = time.time()
    send_stamp(port, tag, started)


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    app.conf.broker_url = options.dsn

    def enqueue_batch(size: int) -> None:
        for _ in range(size):
            noop.delay()

    def enqueue_one(tag: int, port: int) -> None:
        stamp.delay(tag, port)

    return serve(options, enqueue_batch, enqueue_one)


if __name__ == "__main__":
    sys.exit(main())
