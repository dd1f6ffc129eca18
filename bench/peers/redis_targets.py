"""The four systems of the Redis side-by-side run (``bench/peers/redis_run.py``): each one's
worker command, side module, store and how the run empties and reads it.

Where each lives (so that two checkouts can run at once beside each other): the Redis driver in
database n of ``ULTIMAT3_BENCH_REDIS_URL`` (default ``redis://127.0.0.1:6379/11``), Celery in
n+1, RQ in n+2; the PostgreSQL driver in ``<ULTIMAT3_BENCH_DATABASE>_redis_pg``. Only the
driver's ``{ultimat3_jobs}`` keys of n and the keys of n+1 and n+2 are ever deleted.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version as installed_version
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import redis

from bench.peers.server import Server
from bench.support import ROOT, BenchError, subprocess_env

CELERY_VERSION = "5.5.3"
RQ_VERSION = "2.6.0"
SLOTS = 32
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/11"


@dataclass(frozen=True)
class Target:
    """One system as the run drives it."""

    key: str
    label: str
    side: str
    """The module run (``python -m``) for the enqueue and latency phases."""
    worker: tuple[str, ...]
    """The worker command as shown on the page; ``python`` or the program of the system's
    environment."""
    dsn: str
    """What the side is given as ``--dsn``: the system's Redis (or PostgreSQL) URL."""
    pending: Callable[[], int]
    reset: Callable[[], None]
    packages: tuple[str, ...] = ()
    settings: str | None = None
    """``DJANGO_SETTINGS_MODULE`` for ours."""

    def venv(self) -> Path | None:
        if not self.packages:
            return None
        return ROOT / ".local" / "bench-venvs" / f"{self.key}-{self.packages[0].split('==')[1]}"

    def python(self) -> str:
        venv = self.venv()
        return sys.executable if venv is None else str(venv / "bin" / "python")

    def argv(self, words: tuple[str, ...]) -> list[str]:
        program, *rest = words
        if program == "python":
            return [self.python(), *rest]
        return [str(Path(self.python()).parent / program), *rest]

    def env(self) -> dict[str, str]:
        env = subprocess_env()
        env["BENCH_PEER_DSN"] = self.dsn
        env["ULTIMAT3_BENCH_DATABASE"] = postgres_database()
        env["ULTIMAT3_BENCH_REDIS_URL"] = redis_urls()[0]
        if self.settings:
            env["DJANGO_SETTINGS_MODULE"] = self.settings
        return env


def postgres_database() -> str:
    """The PostgreSQL driver's database: the bench database's name with ``_redis_pg``."""
    return (os.environ.get("ULTIMAT3_BENCH_DATABASE") or "ultimat3_bench") + "_redis_pg"


def redis_urls() -> tuple[str, str, str]:
    """The Redis URLs of ours, Celery and RQ: databases n, n+1 and n+2 of
    ``ULTIMAT3_BENCH_REDIS_URL``."""
    base = urlsplit(os.environ.get("ULTIMAT3_BENCH_REDIS_URL") or DEFAULT_REDIS_URL)
    first = int(base.path.strip("/") or 0)
    ours, celery, rq = (urlunsplit(base._replace(path=f"/{first + k}")) for k in range(3))
    return ours, celery, rq


def check_databases(url: str) -> None:
    """Refuse a base database whose n+2 the server does not have."""
    first = int(urlsplit(url).path.strip("/") or 0)
    count = int(redis.Redis.from_url(url).config_get("databases").get("databases", 16))
    if first + 2 >= count:
        raise BenchError(f"ULTIMAT3_BENCH_REDIS_URL's database {first}: the run needs "
                         f"{first}-{first + 2} and the server has 0-{count - 1}")  # fmt: skip


def deleter(client: redis.Redis, pattern: str) -> Callable[[], None]:
    def reset() -> None:
        keys = list(client.scan_iter(match=pattern, count=1000))
        for start in range(0, len(keys), 1000):
            client.delete(*keys[start : start + 1000])

    return reset


def targets(server: Server) -> list[Target]:
    ours_url, celery_url, rq_url = redis_urls()
    ours, celery, rq = (redis.Redis.from_url(url) for url in (ours_url, celery_url, rq_url))
    base = "{ultimat3_jobs}"
    version = installed_version("ultimat3-jobs")

    def ours_pending() -> int:
        queues = [q.decode() for q in ours.smembers(f"{base}:queues")]
        pipe = ours.pipeline(transaction=False)
        for queue in queues:
            pipe.zcard(f"{base}:queued:{queue}")
        pipe.zcard(f"{base}:running")
        return sum(pipe.execute())

    pg_url = server.url(postgres_database())

    def pg_pending() -> int:
        with psycopg.connect(pg_url, autocommit=True) as probe:
            row = probe.execute("select count(*) from x_jobs where state <> 'completed'").fetchone()
        return int(row[0]) if row else 0

    def pg_reset() -> None:
        with psycopg.connect(pg_url, autocommit=True) as probe:
            probe.execute("truncate x_jobs, x_job_counters, x_job_workers cascade")

    def worker(settings: str) -> tuple[str, ...]:
        return ("python", "-m", "django", "jobs_worker", "--settings", settings,
                "--concurrency", str(SLOTS))  # fmt: skip

    return [
        Target(
            key="ours_redis",
            label=f"ultimat3-jobs {version}, Redis driver",
            side="bench.peers.ours_side",
            worker=worker("bench.settings_redis"),
            dsn=ours_url,
            pending=ours_pending,
            reset=deleter(ours, f"{base}*"),
            settings="bench.settings_redis",
        ),
        Target(
            key="ours_postgres",
            label=f"ultimat3-jobs {version}, PostgreSQL driver",
            side="bench.peers.ours_side",
            worker=worker("bench.settings"),
            dsn=pg_url,
            pending=pg_pending,
            reset=pg_reset,
            settings="bench.settings",
        ),
        Target(
            key="celery",
            label=f"Celery {CELERY_VERSION} + Redis",
            side="bench.peers.celery_side",
            worker=("celery", "-A", "bench.peers.celery_side", "worker", "--loglevel", "WARNING"),
            dsn=celery_url,
            pending=lambda: int(celery.llen("celery")) + int(celery.hlen("unacked")),
            reset=deleter(celery, "*"),
            packages=(f"celery[redis]=={CELERY_VERSION}",),
        ),
        Target(
            key="rq",
            label=f"RQ {RQ_VERSION}",
            side="bench.peers.rq_side",
            worker=("rq", "worker", "--url", rq_url, "--logging_level", "WARNING"),
            dsn=rq_url,
            pending=lambda: int(rq.llen("rq:queue:default")) + int(rq.zcard("rq:wip:default")),
            reset=deleter(rq, "rq:*"),
            packages=(f"rq=={RQ_VERSION}",),
        ),
    ]
