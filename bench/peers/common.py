"""What every side of the comparison shares; the standard library only, since each peer's own
interpreter imports it.

The latency job's body stamps ``time.time()`` on its first line and sends it, with the sample's
tag, as one UDP datagram to the port the side listens on: no database statement is added to the
job, and every system is timed by the same clock, from just before its enqueue call.
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import sys
import time
from collections.abc import Callable

STAMP_TIMEOUT = 30.0


def send_stamp(port: int, tag: int, stamped: float) -> None:
    """Called by a job body: tell the side when the body with ``tag`` started."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(f"{tag} {stamped!r}".encode(), ("127.0.0.1", port))


def stamp_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(STAMP_TIMEOUT)
    return sock


def wait_stamp(sock: socket.socket, tag: int) -> float:
    """The body start time of sample ``tag``; datagrams of other tags are dropped."""
    while True:
        data = sock.recv(256).split()
        if int(data[0]) == tag:
            return float(data[1])


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="One side of the side-by-side benchmark.")
    parser.add_argument("action", choices=("enqueue", "latency"))
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--gap", type=float, nargs=2, default=(0.2, 0.5))
    return parser.parse_args(argv)


def emit(result: dict[str, object]) -> None:
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    sys.stdout.flush()


def enqueue_batches(
    jobs: int, batch: int, enqueue_batch: Callable[[int], object]
) -> dict[str, object]:
    """Enqueue ``jobs`` no-op jobs, ``batch`` per call; the rate over the calls alone."""
    start = time.perf_counter()
    done = 0
    while done < jobs:
        size = min(batch, jobs - done)
        enqueue_batch(size)
        done += size
    elapsed = time.perf_counter() - start
    return {"jobs": done, "seconds": elapsed, "rate": done / elapsed}


def latency_samples(
    samples: int,
    gap: tuple[float, float],
    enqueue_one: Callable[[int, int], object],
) -> dict[str, object]:
    """Enqueue one stamping job at a time, idle workers between; per sample the time from just
    before the enqueue call to the body's first line, and the enqueue call's own duration."""
    rng = random.Random(20_240_601)
    latencies, calls = [], []
    with stamp_socket() as sock:
        port = sock.getsockname()[1]
        for tag in range(samples):
            before = time.time()
            enqueue_one(tag, port)
            calls.append((time.time() - before) * 1000)
            latencies.append((wait_stamp(sock, tag) - before) * 1000)
            time.sleep(rng.uniform(*gap))
    return {"latency_ms": latencies, "enqueue_call_ms": calls}


def serve(
    options: argparse.Namespace,
    enqueue_batch: Callable[[int], object],
    enqueue_one: Callable[[int, int], object],
) -> int:
    """Run the side's action (``enqueue`` or ``latency``) with its system's two calls and print
    its result as one line of JSON."""
    if options.action == "enqueue":
        emit(enqueue_batches(options.jobs, options.batch, enqueue_batch))
    else:
        emit(latency_samples(options.samples, tuple(options.gap), enqueue_one))
    return 0
