"""The system checks on the databases the settings name: the PostgreSQL driver on a database that
is not PostgreSQL (E050), an outbox that staging uses on one (E051), an outbox database
without ``x_outbox`` (E052/W052), or out of reach (W053), and the Redis driver's cache alias
(E054)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.conf import settings
from django.core.checks import Error, Warning
from django.db import connection, connections
from django.test import override_settings

from ultimat3_jobs.checks import check_outbox_table, check_settings

SQLITE = {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}
BASE = {"DEFAULT_TENANT": "none"}


@contextmanager
def extra_database(alias: str, config: dict[str, Any]) -> Iterator[None]:
    """``settings.DATABASES`` and Django's connections with one more alias, for this block."""
    with warnings.catch_warnings():
        # Django warns that overriding DATABASES does not rebuild the connections; the alias
        # is added to them below, and removed again after.
        warnings.simplefilter("ignore", UserWarning)
        override = override_settings(DATABASES={**settings.DATABASES, alias: config})
        override.enable()
    configured = connections.configure_settings({"default": config, alias: config})
    connections.settings[alias] = configured[alias]
    try:
        yield
    finally:
        connections[alias].close()
        del connections[alias]
        del connections.settings[alias]
        override.disable()


def ours(messages: list[Any]) -> list[tuple[str, str]]:
    return [(m.id, m.msg) for m in messages if m.id.startswith("ultimat3_jobs.")]


def test_the_postgres_driver_on_a_sqlite_database_fails_the_check() -> None:
    with (
        extra_database("lite", SQLITE),
        override_settings(ULTIMAT3_JOBS={**BASE, "DRIVER": "postgres", "DATABASE": "lite"}),
    ):
        messages = check_settings()
    assert ours(messages), "a SQLite job database passed the checks"
    [error] = messages
    assert isinstance(error, Error) and error.id == "ultimat3_jobs.E050"
    assert "ULTIMAT3_JOBS['DATABASE'] names the database alias 'lite'" in error.msg
    assert "SQLite database (vendor 'sqlite'" in error.msg
    assert "needs PostgreSQL" in error.msg


def test_an_outbox_that_staging_uses_on_sqlite_fails_the_check() -> None:
    jobs = {**BASE, "DRIVER": "postgres", "DATABASE": "default", "OUTBOX_DATABASE": "lite"}
    with extra_database("lite", SQLITE), override_settings(ULTIMAT3_JOBS=jobs):
        messages = ours(check_settings())
    assert [check_id for check_id, _ in messages] == ["ultimat3_jobs.E051"]
    assert "ULTIMAT3_JOBS['OUTBOX_DATABASE'] names the database alias 'lite'" in messages[0][1]
    assert "staged in x_outbox" in messages[0][1]


def test_the_memory_driver_on_sqlite_passes() -> None:
    jobs = {**BASE, "DRIVER": "memory", "DATABASE": "lite", "OUTBOX_DATABASE": "lite"}
    with extra_database("lite", SQLITE), override_settings(ULTIMAT3_JOBS=jobs):
        assert ours(check_settings()) == []


def test_postgresql_everywhere_passes() -> None:
    jobs = {**BASE, "DRIVER": "postgres", "DATABASE": "jobs", "OUTBOX_DATABASE": "default"}
    with override_settings(ULTIMAT3_JOBS=jobs):
        assert ours(check_settings()) == []


REDIS_JOBS = {**BASE, "DRIVER": "redis", "REDIS_ALIAS": "redis"}


def test_the_redis_driver_on_a_django_redis_cache_passes() -> None:
    # tests/settings.py defines the "redis" cache with the django-redis backend.
    with override_settings(ULTIMAT3_JOBS=REDIS_JOBS):
        assert ours(check_settings()) == []


def test_the_redis_driver_refuses_a_cache_alias_caches_does_not_define() -> None:
    with override_settings(ULTIMAT3_JOBS={**REDIS_JOBS, "REDIS_ALIAS": "jobs-redis"}):
        messages = ours(check_settings())
    [(check_id, message)] = messages
    assert check_id == "ultimat3_jobs.E054"
    assert "ULTIMAT3_JOBS['REDIS_ALIAS'] names the cache alias 'jobs-redis'" in message
    assert "which settings.CACHES does not define (defined: 'default', 'redis')" in message
    assert "django_redis.cache.RedisCache" in message


def test_the_redis_driver_refuses_a_cache_that_is_not_django_redis() -> None:
    with override_settings(ULTIMAT3_JOBS={**REDIS_JOBS, "REDIS_ALIAS": "default"}):
        messages = ours(check_settings())
    [(check_id, message)] = messages
    assert check_id == "ultimat3_jobs.E054"
    assert "names the cache alias 'default'" in message
    assert "whose BACKEND is 'django.core.cache.backends.locmem.LocMemCache'" in message
    assert "not django-redis" in message


def test_the_redis_alias_is_not_checked_for_another_driver() -> None:
    with override_settings(ULTIMAT3_JOBS={**BASE, "DRIVER": "memory", "REDIS_ALIAS": "nowhere"}):
        assert ours(check_settings()) == []


OTHER_STORE = {**BASE, "DRIVER": "postgres", "DATABASE": "jobs", "OUTBOX_DATABASE": "default"}


@pytest.mark.django_db
@override_settings(ULTIMAT3_JOBS=OTHER_STORE)
def test_the_outbox_table_is_looked_for_only_when_its_database_is_checked() -> None:
    assert check_outbox_table(databases=["default"]) == []
    with connection.cursor() as cursor:
        cursor.execute("drop table x_outbox")  # undone with the test's transaction
    assert check_outbox_table(databases=None) == []
    assert check_outbox_table(databases=["jobs"]) == []
    [error] = check_outbox_table(databases=["default"])
    assert isinstance(error, Error) and error.id == "ultimat3_jobs.E052"
    assert "names 'default', which has no x_outbox table" in error.msg
    assert "0002_outbox is recorded as applied" in error.msg


@pytest.mark.django_db
@override_settings(ULTIMAT3_JOBS=OTHER_STORE)
def test_an_unmigrated_outbox_is_a_warning_that_lets_migrate_run() -> None:
    with connection.cursor() as cursor:
        cursor.execute("drop table x_outbox")
        cursor.execute(
            "delete from django_migrations where app = 'ultimat3_jobs' and name = '0002_outbox'"
        )
    [warning] = check_outbox_table(databases=["default"])
    assert isinstance(warning, Warning) and warning.id == "ultimat3_jobs.W052"
    assert "run `manage.py migrate --database default`" in warning.msg


@pytest.mark.django_db
@override_settings(ULTIMAT3_JOBS={**OTHER_STORE, "DATABASE": "default"})
def test_an_outbox_that_staging_does_not_use_is_not_looked_for() -> None:
    with connection.cursor() as cursor:
        cursor.execute("drop table x_outbox")
    assert check_outbox_table(databases=["default"]) == []


def test_an_unreachable_outbox_database_is_a_warning_not_a_crash(django_db_blocker: Any) -> None:
    down = {**settings.DATABASES["default"], "HOST": "127.0.0.1", "PORT": "1"}
    down["OPTIONS"] = {**down.get("OPTIONS", {}), "connect_timeout": 2}
    jobs = {**OTHER_STORE, "DATABASE": "default", "OUTBOX_DATABASE": "down"}
    with (
        extra_database("down", down),
        override_settings(ULTIMAT3_JOBS=jobs),
        django_db_blocker.unblock(),  # a connection to a database no test creates
    ):
        [warning] = check_outbox_table(databases=["down"])
    assert isinstance(warning, Warning) and warning.id == "ultimat3_jobs.W053"
    assert "OUTBOX_DATABASE 'down' could not be reached" in warning.msg
