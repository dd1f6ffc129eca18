"""Where the Redis side-by-side run works: named from the environment, so that two checkouts can
run it at once on one PostgreSQL and one Redis server; and RQ's bounded share of the backlog."""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis

from bench.peers.redis_run import FULL, QUICK
from bench.peers.redis_targets import check_databases, postgres_database, redis_urls
from bench.support import BenchError


def test_the_redis_databases_are_n_to_n_plus_2_of_the_bench_url(monkeypatch):
    monkeypatch.setenv("ULTIMAT3_BENCH_REDIS_URL", "redis://:pw@10.0.0.5:6390/4")
    assert redis_urls() == (
        "redis://:pw@10.0.0.5:6390/4",
        "redis://:pw@10.0.0.5:6390/5",
        "redis://:pw@10.0.0.5:6390/6",
    )


def test_without_a_bench_url_the_databases_are_11_to_13(monkeypatch):
    monkeypatch.delenv("ULTIMAT3_BENCH_REDIS_URL", raising=False)
    assert [url.rsplit("/", 1)[1] for url in redis_urls()] == ["11", "12", "13"]


def test_the_postgres_database_is_named_after_the_bench_database(monkeypatch):
    monkeypatch.setenv("ULTIMAT3_BENCH_DATABASE", "hb_someone")
    assert postgres_database() == "hb_someone_redis_pg"
    monkeypatch.delenv("ULTIMAT3_BENCH_DATABASE")
    assert postgres_database() == "ultimat3_bench_redis_pg"


def test_a_base_database_without_room_for_three_is_refused():
    """On the test Redis (it only reads CONFIG GET databases)."""
    server = urlsplit(os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0")
    count = int(redis.Redis.from_url(urlunsplit(server)).config_get("databases")["databases"])
    check_databases(urlunsplit(server._replace(path=f"/{count - 3}")))
    with pytest.raises(BenchError, match=f"needs {count - 2}-{count}"):
        check_databases(urlunsplit(server._replace(path=f"/{count - 2}")))


def test_rq_drains_a_bounded_share_and_every_other_system_the_whole_backlog():
    class Target:
        def __init__(self, key):
            self.key = key

    assert FULL.backlog(Target("rq")) == FULL.rq_jobs < FULL.jobs
    assert FULL.backlog(Target("celery")) == FULL.jobs
    assert FULL.backlog(Target("ours_redis")) == FULL.jobs
    assert QUICK.backlog(Target("rq")) <= QUICK.jobs
