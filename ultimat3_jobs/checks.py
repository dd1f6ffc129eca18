"""System checks: each problem of ``ULTIMAT3_JOBS`` as ``ultimat3_jobs.E0xx``, with the same
message the settings loader raises, the databases the settings name (E050 to W053), and the
cache the Redis driver takes its client from (E054), the tenancy hooks (E063 to E065), and the
declared limits the driver can enforce (E080).

The checks that read no database are tagged ``CHECK_TAG`` too: the long-running commands
(``jobs_worker``, ``jobs_relay``, ``jobs_scheduler``) run those alone at start-up rather than
every app's checks, which ``manage.py check`` runs as before. The database check stays out of
the tag: a command given tags runs database checks on every alias."""

from __future__ import annotations

from typing import Any

from django.conf import settings as django_settings
from django.core import checks
from django.db import DatabaseError, connections
from django.db.migrations.recorder import MigrationRecorder
from django.utils.module_loading import import_string

from ultimat3_jobs.conf import SPEC, Settings, get_settings, raw_setting, validate
from ultimat3_jobs.drivers import get_driver
from ultimat3_jobs.drivers.base import JobDriver
from ultimat3_jobs.drivers.postgres.driver import PostgresDriver
from ultimat3_jobs.model.registry import registry
from ultimat3_jobs.model.tenancy import check_tenancy_hooks
from ultimat3_jobs.model.tracing import check_traceparent_source
from ultimat3_jobs.runtime.worker.limits import unenforceable

DRIVER_CHECK_ID = "ultimat3_jobs.E010"
STORE_VENDOR_CHECK_ID = "ultimat3_jobs.E050"
OUTBOX_VENDOR_CHECK_ID = "ultimat3_jobs.E051"
OUTBOX_TABLE_CHECK_ID = "ultimat3_jobs.E052"
OUTBOX_UNCHECKED_ID = "ultimat3_jobs.W053"
REDIS_ALIAS_CHECK_ID = "ultimat3_jobs.E054"
DJANGO_REDIS_BACKEND = "django_redis.cache.RedisCache"
OUTBOX_TABLE = "x_outbox"
OUTBOX_MIGRATION = ("ultimat3_jobs", "0002_outbox")
HINT = "See docs/reference/settings.md."
TRACEPARENT_CHECK_ID = "ultimat3_jobs.E060"
LIMITS_CHECK_ID = "ultimat3_jobs.E080"
TENANT_MIDDLEWARE = "ultimat3_jobs.tenancy.TenantMiddleware"
CHECK_TAG = "ultimat3_jobs"
"""The tag of the checks that read no database (``manage.py check --tag ultimat3_jobs``)."""


@checks.register(checks.Tags.compatibility, CHECK_TAG)
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    problems = validate(raw_setting())
    if not problems:
        settings = get_settings()
        problems = check_driver_importable(settings)
        traceparent = check_traceparent_source(settings)
        if traceparent is not None:
            problems.append((TRACEPARENT_CHECK_ID, traceparent))
        problems.extend(check_tenancy(settings))
    if not problems:
        problems = check_database_vendors(get_settings()) + check_redis_alias(get_settings())
    return [checks.Error(message, id=check_id, hint=HINT) for check_id, message in problems]


@checks.register(checks.Tags.compatibility, CHECK_TAG)
def check_limits_enforceable(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Every declared ``concurrency`` and ``rate`` can be enforced: the driver keeps leases."""
    if validate(raw_setting()) or check_driver_importable(get_settings()):
        return []  # reported by check_settings
    refused = unenforceable(get_driver(), registry.definitions())
    if refused is None:
        return []
    return [checks.Error(str(refused), id=LIMITS_CHECK_ID, hint="See docs/guides/limits.md.")]


def check_tenancy(settings: Settings) -> list[tuple[str, str]]:
    """The tenancy settings name callables (E063 to E065), and ``TenantMiddleware`` in
    ``MIDDLEWARE`` has its ``TENANT_FROM_REQUEST`` (E065)."""
    check_ids = {key: check_id for key, check_id, _ in SPEC}
    problems = [(check_ids[key], message) for key, message in check_tenancy_hooks(settings)]
    middleware = getattr(django_settings, "MIDDLEWARE", None) or ()
    if TENANT_MIDDLEWARE in middleware and settings.tenant_from_request is None:
        problems.append(
            (
                check_ids["TENANT_FROM_REQUEST"],
                f"settings.MIDDLEWARE has {TENANT_MIDDLEWARE!r}, but "
                "ULTIMAT3_JOBS['TENANT_FROM_REQUEST'] is not set: it names the callable of the "
                "request that answers its tenant",
            )
        )
    return problems


def check_driver_importable(settings: Settings) -> list[tuple[str, str]]:
    """``DRIVER`` names a class that imports and is a JobDriver."""
    path = settings.driver_path
    try:
        driver_class = import_string(path)
    except ImportError as exc:
        return [
            (
                DRIVER_CHECK_ID,
                f"ULTIMAT3_JOBS['DRIVER'] names {path!r}, which cannot be imported: {exc}",
            )
        ]
    if not (isinstance(driver_class, type) and issubclass(driver_class, JobDriver)):
        return [
            (
                DRIVER_CHECK_ID,
                f"ULTIMAT3_JOBS['DRIVER'] names {path!r}, which is not a JobDriver subclass",
            )
        ]
    return []


def _not_postgresql(key: str, alias: str, needs: str) -> str:
    connection = connections[alias]
    return (
        f"ULTIMAT3_JOBS[{key!r}] names the database alias {alias!r}, a "
        f"{connection.display_name} database (vendor {connection.vendor!r}, ENGINE "
        f"{connection.settings_dict.get('ENGINE')!r}); {needs} needs PostgreSQL"
    )


def stages_by_default(settings: Settings) -> bool:
    """Whether an enqueue inside ``transaction.atomic(using=OUTBOX_DATABASE)`` is staged in
    ``x_outbox``: the job store does not commit with that alias."""
    return not get_driver().commits_with(settings.outbox_database)


def check_database_vendors(settings: Settings) -> list[tuple[str, str]]:
    """The PostgreSQL driver's ``DATABASE``, and an ``OUTBOX_DATABASE`` that staging uses, are
    PostgreSQL databases. Reads the configured ENGINE only: no connection is opened."""
    problems = []
    driver_class = import_string(settings.driver_path)
    if issubclass(driver_class, PostgresDriver) and not _is_postgresql(settings.database):
        needs = "the PostgreSQL driver (its statements are PostgreSQL's)"
        problems.append(
            (STORE_VENDOR_CHECK_ID, _not_postgresql("DATABASE", settings.database, needs))
        )
    if stages_by_default(settings) and not _is_postgresql(settings.outbox_database):
        needs = (
            f"the outbox (an enqueue inside transaction.atomic(using="
            f"{settings.outbox_database!r}) is staged in {OUTBOX_TABLE} there, since the job "
            "store does not commit with it)"
        )
        problems.append(
            (
                OUTBOX_VENDOR_CHECK_ID,
                _not_postgresql("OUTBOX_DATABASE", settings.outbox_database, needs),
            )
        )
    return problems


def check_redis_alias(settings: Settings) -> list[tuple[str, str]]:
    """The Redis driver's ``REDIS_ALIAS`` names a cache of ``settings.CACHES`` whose backend is
    django-redis: the driver takes its client from ``django_redis.get_redis_connection``. Reads
    the settings only: no connection is opened, and the redis package is not imported."""
    if getattr(import_string(settings.driver_path), "name", None) != "redis":
        return []
    alias = settings.redis_alias
    caches = getattr(django_settings, "CACHES", None) or {}
    needs = (
        f"the Redis driver takes its client from django_redis.get_redis_connection({alias!r}), "
        f"so that cache must use the django-redis backend ({DJANGO_REDIS_BACKEND!r})"
    )
    config = caches.get(alias)
    if not isinstance(config, dict):
        defined = ", ".join(repr(name) for name in caches) or "none"
        told = f"which settings.CACHES does not define (defined: {defined})"
    else:
        backend = config.get("BACKEND")
        if isinstance(backend, str) and backend.startswith("django_redis."):
            return []
        told = f"whose BACKEND is {backend!r}, not django-redis"
    message = f"ULTIMAT3_JOBS['REDIS_ALIAS'] names the cache alias {alias!r}, {told}; {needs}"
    return [(REDIS_ALIAS_CHECK_ID, message)]


def _is_postgresql(alias: str) -> bool:
    return connections[alias].vendor == "postgresql"


@checks.register(checks.Tags.database)
def check_outbox_table(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """``x_outbox`` exists on ``OUTBOX_DATABASE`` when staging uses it. A database check: Django
    runs it only for ``check --database ALIAS`` and ``migrate``. An unreachable database is
    reported as warning W053, not checked."""
    if validate(raw_setting()):
        return []
    settings = get_settings()
    alias = settings.outbox_database
    if alias not in (databases or ()) or not _is_postgresql(alias):
        return []
    if check_driver_importable(settings) or not stages_by_default(settings):
        return []
    connection = connections[alias]
    try:
        tables = connection.introspection.table_names()
        recorded = OUTBOX_MIGRATION in MigrationRecorder(connection).applied_migrations()
    except DatabaseError as exc:
        return [
            checks.Warning(
                f"OUTBOX_DATABASE {alias!r} could not be reached to look for {OUTBOX_TABLE} "
                f"({type(exc).__name__}: {str(exc).strip()[:200]}); not checked.",
                id=OUTBOX_UNCHECKED_ID,
                hint=HINT,
            )
        ]
    if OUTBOX_TABLE in tables:
        return []
    message = (
        f"ULTIMAT3_JOBS['OUTBOX_DATABASE'] names {alias!r}, which has no {OUTBOX_TABLE} table, "
        f"where an enqueue inside transaction.atomic(using={alias!r}) is staged"
    )
    if recorded:
        return [
            checks.Error(
                f"{message}, although the migration {'.'.join(OUTBOX_MIGRATION)} is recorded "
                "as applied there (was it faked, or the table dropped?).",
                id=OUTBOX_TABLE_CHECK_ID,
                hint=HINT,
            )
        ]
    # Not migrated yet: an error would stop `migrate` itself, which runs this check.
    return [
        checks.Warning(
            f"{message}: run `manage.py migrate --database {alias}`.",
            id=OUTBOX_TABLE_CHECK_ID.replace(".E", ".W"),
            hint=HINT,
        )
    ]
