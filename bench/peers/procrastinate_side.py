"""Procrastinate's side, run by the interpreter of its throw-away virtualenv.

    python -m bench.peers.procrastinate_side enqueue|latency --dsn DSN [...]
    procrastinate --app=bench.peers.procrastinate_side.app worker ...   # DSN in BENCH_PEER_DSN

The tasks are coroutines (Procrastinate runs sync tasks in threads), and jobs are enqueued with
``batch_defer_async`` (one statement per batch) through the ``PsycopgConnector`` the
documentation recommends for async code.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

import procrastinate

from bench.peers.common import parse, send_stamp, serve

DSN_VARIABLE = "BENCH_PEER_DSN"

app = procrastinate.App(
    connector=procrastinate.PsycopgConnector(conninfo=os.environ.get(DSN_VARIABLE, ""))
)


@app.task(name="noop")
async def noop() -> None:
    """Does nothing."""


@app.task(name="stamp")
async def stamp(tag: int, port: int) -> None:
    started = time.time()
    send_stamp(port, tag, started)


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    loop = asyncio.new_event_loop()
    local = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=options.dsn))
    loop.run_until_complete(local.open_async())
    local_noop = local.configure_task("noop")
    local_stamp = local.configure_task("stamp")

    def enqueue_batch(size: int) -> None:
        loop.run_until_complete(local_noop.batch_defer_async(*({} for _ in range(size))))

    def enqueue_one(tag: int, port: int) -> None:
        loop.run_until_complete(local_stamp.defer_async(tag=tag, port=port))

    try:
        serve(options, enqueue_batch, enqueue_one)
    finally:
        loop.run_until_complete(local.close_async())
        loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
