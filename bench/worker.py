"""A worker with the wake turned off, for the benchmark's polling-only figures.

No setting or ``jobs_worker`` option turns the wake off: ``WorkerConfig.use_wake`` is a field of
the worker's configuration only. This runs the same ``run_worker`` that ``jobs_worker`` runs, with
the configuration it would build from the settings, except ``use_wake=False``: the loop never
subscribes, so it backs off to ``POLL_CEILING_SECONDS`` as a worker does whose wake never
proves live (behind a transaction-pooling proxy, say), without the probe that one still sends.

    python -m bench.worker --settings bench.settings [--concurrency N] [--log-level INFO]
"""

from __future__ import annotations

import argparse
import logging
import os
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", default="bench.settings")
    parser.add_argument("--concurrency", type=int, default=None)
    parser.add_argument("--burst", action="store_true")
    parser.add_argument("--log-level", default="INFO")
    options = parser.parse_args(argv)
    os.environ["DJANGO_SETTINGS_MODULE"] = options.settings

    import django

    django.setup()

    from ultimat3_jobs.runtime.process import run_worker
    from ultimat3_jobs.runtime.worker.config import WorkerConfig

    logger = logging.getLogger("ultimat3_jobs")
    logger.setLevel(options.log_level)
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logger.addHandler(handler)
    config = WorkerConfig.from_settings(
        concurrency=options.concurrency, burst=options.burst, use_wake=False
    )
    return run_worker(config)


if __name__ == "__main__":
    sys.exit(main())
