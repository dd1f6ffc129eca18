"""pgqueuer's side, run by the interpreter of its throw-away virtualenv.

    python -m bench.peers.pgqueuer_side enqueue|latency --dsn DSN [...]
    pgq run bench.peers.pgqueuer_side:create_pgqueuer        # the worker (DSN in BENCH_PEER_DSN)

Jobs are enqueued with ``Queries.enqueue`` (lists of entrypoints, payloads and priorities: one
statement per batch) over an asyncpg connection, as pgqueuer's documentation shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import AsyncIterator

import asyncpg
from pgqueuer import PgQueuer
from pgqueuer.db import AsyncpgDriver
from pgqueuer.models import Job
from pgqueuer.queries import Queries

from bench.peers.common import parse, send_stamp, serve

DSN_VARIABLE = "BENCH_PEER_DSN"


@contextlib.asynccontextmanager
async def create_pgqueuer() -> AsyncIterator[PgQueuer]:
    """The worker's factory, for ``pgq run`` (which wants an async context manager)."""
    connection = await asyncpg.connect(os.environ[DSN_VARIABLE])
    pgq = PgQueuer(AsyncpgDriver(connection))

    @pgq.entrypoint("noop")
    async def noop(job: Job) -> None:
        """Does nothing."""

    @pgq.entrypoint("stamp")
    async def stamp(job: Job) -> None:
        started = time.time()
        assert job.payload is not None
        sample = json.loads(job.payload)
        send_stamp(sample["port"], sample["tag"], started)

    try:
        yield pgq
    finally:
        await connection.close()


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    loop = asyncio.new_event_loop()
    connection = loop.run_until_complete(asyncpg.connect(options.dsn))
    queries = Queries(AsyncpgDriver(connection))

    def enqueue_batch(size: int) -> None:
        loop.run_until_complete(queries.enqueue(["noop"] * size, [None] * size, [0] * size))

    def enqueue_one(tag: int, port: int) -> None:
        payload = json.dumps({"tag": tag, "port": port}).encode()
        loop.run_until_complete(queries.enqueue("stamp", payload))

    try:
        serve(options, enqueue_batch, enqueue_one)
    finally:
        loop.run_until_complete(connection.close())
        loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
