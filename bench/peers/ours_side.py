"""ultimat3-jobs' side, run by the project's interpreter with ``bench.settings``.

    python -m bench.peers.ours_side enqueue|latency --dsn DSN [...]

The database is the one ``ULTIMAT3_BENCH_DATABASE`` names (``--dsn`` is accepted for symmetry
with the peers and not used). No-op jobs are ``tests.noop``, enqueued with ``enqueue_many``; the
latency job is ``bench.stamp`` (``bench/jobs.py``).
"""

from __future__ import annotations

import os
import sys

from bench.peers.common import parse, serve


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    import django

    django.setup()
    from django.db import connection

    from bench.jobs import stamp
    from tests.testapp.jobs import noop

    # Connected before the timed calls, as the peers' sides open theirs before ``serve``.
    connection.ensure_connection()

    def enqueue_batch(size: int) -> None:
        noop.enqueue_many([{} for _ in range(size)])

    def enqueue_one(tag: int, port: int) -> None:
        stamp.enqueue(tag=tag, port=port)

    return serve(options, enqueue_batch, enqueue_one)


if __name__ == "__main__":
    sys.exit(main())
