"""``settings.ULTIMAT3_JOBS``, read once into a validated, frozen :class:`Settings`.

Layer L1 (core): imports the standard library, ``django.conf`` and earlier L1 modules.

Each key has one validator that answers a message naming the key, the rule and the value. The same
message is a system check (``ultimat3_jobs.E0xx``, see ``checks.py``) and the text of the
:class:`~ultimat3_jobs.errors.JobsConfigurationError` raised when the settings are read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from functools import cache
from typing import Any

from django.conf import settings as django_settings

from ultimat3_jobs.conf_rules import (  # noqa: F401 -- DRIVER_ALIASES, number: read from conf
    _RETENTION,
    DRIVER_ALIASES,
    SETTING_NAME,
    Validator,
    _cache_alias,
    _callable_path,
    _cron,
    _database,
    _describe,
    _driver,
    _environment,
    _limits,
    _networks,
    _problem,
    _queue,
    _tenant,
    number,
    or_none,
)
from ultimat3_jobs.errors import JobsConfigurationError
from ultimat3_jobs.records import LIMIT_KEYS, ProcessLimits
from ultimat3_jobs.serialization import encode_json

DRIVER_DEFAULT = "postgres"
DATABASE_DEFAULT = "default"
REDIS_ALIAS_DEFAULT = "default"
DEFAULT_QUEUE_DEFAULT = "default"
DEFAULT_TENANT_DEFAULT: str | None = None
DEFAULT_MAX_ATTEMPTS_DEFAULT = 3
INPUT_MAX_BYTES_DEFAULT = 256 * 1024
INPUT_MAX_DEPTH_DEFAULT = 32
VISIBILITY_TIMEOUT_SECONDS_DEFAULT = 300.0
RETRY_BACKOFF_BASE_SECONDS_DEFAULT = 1.0
RETRY_BACKOFF_CAP_SECONDS_DEFAULT = 3600.0
RETRY_JITTER_DEFAULT = 0.1
WORKER_CONCURRENCY_DEFAULT = 10
HEARTBEAT_INTERVAL_SECONDS_DEFAULT = 10.0
RESCUE_INTERVAL_SECONDS_DEFAULT = 30.0
REGISTRY_INTERVAL_SECONDS_DEFAULT = 30.0
POLL_FLOOR_SECONDS_DEFAULT = 0.05
POLL_CEILING_SECONDS_DEFAULT = 3.0
POLL_CEILING_WAKE_SECONDS_DEFAULT = 10.0
SHUTDOWN_GRACE_SECONDS_DEFAULT = 30.0
TIMEOUT_GRACE_SECONDS_DEFAULT = 5.0
ACK_FLUSH_SECONDS_DEFAULT = 0.005
PROGRESS_INTERVAL_SECONDS_DEFAULT = 1.0
OUTBOX_DATABASE_DEFAULT = "default"
OUTBOX_RETENTION_SECONDS_DEFAULT = 86400.0
RELAY_BATCH_SIZE_DEFAULT = 500
RELAY_LEASE_SECONDS_DEFAULT = 60.0
SCHEDULER_LEASE_SECONDS_DEFAULT = 60.0
SCHEDULER_MISSED_AFTER_SECONDS_DEFAULT = 300.0
TRACEPARENT_DEFAULT: str | Callable[[], str | None] | None = None
ON_SETTLED_ATTEMPTS_DEFAULT = 3
TenancyHook = str | Callable[..., Any] | None
LIMITS_DEFAULT = ProcessLimits()

WEBHOOK_DISABLE_AFTER_FAILURES_DEFAULT = 100
WEBHOOK_ALLOWED_NETWORKS_DEFAULT: tuple[str, ...] = ()
WEBHOOK_CONNECT_TIMEOUT_SECONDS_DEFAULT = 5.0
WEBHOOK_READ_TIMEOUT_SECONDS_DEFAULT = 15.0
WEBHOOK_SECRET_OVERLAP_SECONDS_DEFAULT = 86400.0
RETENTION_COMPLETED_SECONDS_DEFAULT: float | None = 7 * 86400.0
RETENTION_FAILED_SECONDS_DEFAULT: float | None = 30 * 86400.0
RETENTION_CANCELLED_SECONDS_DEFAULT: float | None = 7 * 86400.0
RETENTION_EVENTS_SECONDS_DEFAULT: float | None = 0.0
RETENTION_COUNTERS_SECONDS_DEFAULT: float | None = 90 * 86400.0
RETENTION_WEBHOOKS_SECONDS_DEFAULT: float | None = 30 * 86400.0
PURGE_CRON_DEFAULT: str | None = "*/15 * * * *"
PURGE_BATCH_SIZE_DEFAULT = 1000
ENVIRONMENT_DEFAULT = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """The validated ``ULTIMAT3_JOBS`` setting. Read it with :func:`get_settings`."""

    driver: str = DRIVER_DEFAULT
    database: str = DATABASE_DEFAULT
    redis_alias: str = REDIS_ALIAS_DEFAULT
    default_queue: str = DEFAULT_QUEUE_DEFAULT
    default_tenant: str | None = DEFAULT_TENANT_DEFAULT
    default_max_attempts: int = DEFAULT_MAX_ATTEMPTS_DEFAULT
    input_max_bytes: int = INPUT_MAX_BYTES_DEFAULT
    input_max_depth: int = INPUT_MAX_DEPTH_DEFAULT
    visibility_timeout_seconds: float = VISIBILITY_TIMEOUT_SECONDS_DEFAULT
    retry_backoff_base_seconds: float = RETRY_BACKOFF_BASE_SECONDS_DEFAULT
    retry_backoff_cap_seconds: float = RETRY_BACKOFF_CAP_SECONDS_DEFAULT
    retry_jitter: float = RETRY_JITTER_DEFAULT
    worker_concurrency: int = WORKER_CONCURRENCY_DEFAULT
    heartbeat_interval_seconds: float = HEARTBEAT_INTERVAL_SECONDS_DEFAULT
    rescue_interval_seconds: float = RESCUE_INTERVAL_SECONDS_DEFAULT
    registry_interval_seconds: float = REGISTRY_INTERVAL_SECONDS_DEFAULT
    poll_floor_seconds: float = POLL_FLOOR_SECONDS_DEFAULT
    poll_ceiling_seconds: float = POLL_CEILING_SECONDS_DEFAULT
    poll_ceiling_wake_seconds: float = POLL_CEILING_WAKE_SECONDS_DEFAULT
    shutdown_grace_seconds: float = SHUTDOWN_GRACE_SECONDS_DEFAULT
    timeout_grace_seconds: float = TIMEOUT_GRACE_SECONDS_DEFAULT
    ack_flush_seconds: float = ACK_FLUSH_SECONDS_DEFAULT
    progress_interval_seconds: float = PROGRESS_INTERVAL_SECONDS_DEFAULT
    outbox_database: str = OUTBOX_DATABASE_DEFAULT
    outbox_retention_seconds: float = OUTBOX_RETENTION_SECONDS_DEFAULT
    relay_batch_size: int = RELAY_BATCH_SIZE_DEFAULT
    relay_lease_seconds: float = RELAY_LEASE_SECONDS_DEFAULT
    scheduler_lease_seconds: float = SCHEDULER_LEASE_SECONDS_DEFAULT
    scheduler_missed_after_seconds: float = SCHEDULER_MISSED_AFTER_SECONDS_DEFAULT
    traceparent: str | Callable[[], str | None] | None = TRACEPARENT_DEFAULT
    limits: ProcessLimits = LIMITS_DEFAULT
    on_settled_attempts: int = ON_SETTLED_ATTEMPTS_DEFAULT
    tenant_resolver: TenancyHook = None
    tenant_context: TenancyHook = None
    tenant_from_request: TenancyHook = None
    webhook_disable_after_failures: int = WEBHOOK_DISABLE_AFTER_FAILURES_DEFAULT
    webhook_allowed_networks: tuple[str, ...] = WEBHOOK_ALLOWED_NETWORKS_DEFAULT
    webhook_connect_timeout_seconds: float = WEBHOOK_CONNECT_TIMEOUT_SECONDS_DEFAULT
    webhook_read_timeout_seconds: float = WEBHOOK_READ_TIMEOUT_SECONDS_DEFAULT
    webhook_secret_overlap_seconds: float = WEBHOOK_SECRET_OVERLAP_SECONDS_DEFAULT
    retention_completed_seconds: float | None = RETENTION_COMPLETED_SECONDS_DEFAULT
    retention_failed_seconds: float | None = RETENTION_FAILED_SECONDS_DEFAULT
    retention_cancelled_seconds: float | None = RETENTION_CANCELLED_SECONDS_DEFAULT
    retention_events_seconds: float | None = RETENTION_EVENTS_SECONDS_DEFAULT
    retention_counters_seconds: float | None = RETENTION_COUNTERS_SECONDS_DEFAULT
    retention_webhooks_seconds: float | None = RETENTION_WEBHOOKS_SECONDS_DEFAULT
    purge_cron: str | None = PURGE_CRON_DEFAULT
    purge_batch_size: int = PURGE_BATCH_SIZE_DEFAULT
    environment: str = ENVIRONMENT_DEFAULT

    def encode_stored(self, value: Any, *, root: str = "input") -> str:
        """``value`` as the JSON text the store keeps for a job's input, its result, a step's
        result or an event's payload: the input rules under INPUT_MAX_DEPTH and INPUT_MAX_BYTES
        (refused with :class:`~ultimat3_jobs.errors.JobInputInvalid` naming ``root``)."""
        return encode_json(
            value, root=root, max_depth=self.input_max_depth, max_bytes=self.input_max_bytes
        )

    @property
    def driver_path(self) -> str:
        """The dotted path of the driver class (``DRIVER`` with its aliases resolved)."""
        return DRIVER_ALIASES.get(self.driver, self.driver)


SPEC: tuple[tuple[str, str, Validator], ...] = (
    # (key, check id, validator); the attribute is the key in lower case.
    ("DRIVER", "ultimat3_jobs.E010", _driver),
    ("DATABASE", "ultimat3_jobs.E011", _database),
    ("DEFAULT_QUEUE", "ultimat3_jobs.E012", _queue),
    ("DEFAULT_TENANT", "ultimat3_jobs.E013", _tenant),
    ("REDIS_ALIAS", "ultimat3_jobs.E014", _cache_alias),
    ("DEFAULT_MAX_ATTEMPTS", "ultimat3_jobs.E020", number(minimum=1, maximum=1000, integer=True)),
    ("INPUT_MAX_BYTES", "ultimat3_jobs.E021", number(minimum=1, maximum=64 * 2**20, integer=True)),
    ("INPUT_MAX_DEPTH", "ultimat3_jobs.E022", number(minimum=1, maximum=256, integer=True)),
    (
        "VISIBILITY_TIMEOUT_SECONDS",
        "ultimat3_jobs.E023",
        number(minimum=1, maximum=7 * 86400),
    ),
    ("RETRY_BACKOFF_BASE_SECONDS", "ultimat3_jobs.E024", number(minimum=0, maximum=86400)),
    ("RETRY_BACKOFF_CAP_SECONDS", "ultimat3_jobs.E025", number(minimum=0, maximum=30 * 86400)),
    ("RETRY_JITTER", "ultimat3_jobs.E026", number(minimum=0, maximum=1)),
    ("WORKER_CONCURRENCY", "ultimat3_jobs.E030", number(minimum=1, maximum=1000, integer=True)),
    (
        "HEARTBEAT_INTERVAL_SECONDS",
        "ultimat3_jobs.E031",
        number(minimum=0.05, maximum=3600),
    ),
    ("RESCUE_INTERVAL_SECONDS", "ultimat3_jobs.E032", number(minimum=0.05, maximum=3600)),
    ("REGISTRY_INTERVAL_SECONDS", "ultimat3_jobs.E033", number(minimum=0.05, maximum=3600)),
    ("POLL_FLOOR_SECONDS", "ultimat3_jobs.E034", number(minimum=0.001, maximum=60)),
    ("POLL_CEILING_SECONDS", "ultimat3_jobs.E035", number(minimum=0.001, maximum=600)),
    ("POLL_CEILING_WAKE_SECONDS", "ultimat3_jobs.E036", number(minimum=0.001, maximum=600)),
    ("SHUTDOWN_GRACE_SECONDS", "ultimat3_jobs.E037", number(minimum=0, maximum=86400)),
    ("TIMEOUT_GRACE_SECONDS", "ultimat3_jobs.E038", number(minimum=0, maximum=3600)),
    ("ACK_FLUSH_SECONDS", "ultimat3_jobs.E039", number(minimum=0, maximum=1)),
    ("PROGRESS_INTERVAL_SECONDS", "ultimat3_jobs.E040", number(minimum=0, maximum=3600)),
    ("OUTBOX_DATABASE", "ultimat3_jobs.E041", _database),
    (
        "OUTBOX_RETENTION_SECONDS",
        "ultimat3_jobs.E042",
        number(minimum=0, maximum=90 * 86400),
    ),
    ("RELAY_BATCH_SIZE", "ultimat3_jobs.E043", number(minimum=1, maximum=1000, integer=True)),
    ("RELAY_LEASE_SECONDS", "ultimat3_jobs.E044", number(minimum=1, maximum=3600)),
    ("SCHEDULER_LEASE_SECONDS", "ultimat3_jobs.E045", number(minimum=1, maximum=3600)),
    (
        "SCHEDULER_MISSED_AFTER_SECONDS",
        "ultimat3_jobs.E046",
        number(minimum=1, maximum=86400),
    ),
    ("TRACEPARENT", "ultimat3_jobs.E060", _callable_path),
    ("LIMITS", "ultimat3_jobs.E061", _limits),
    ("ON_SETTLED_ATTEMPTS", "ultimat3_jobs.E062", number(minimum=1, maximum=10, integer=True)),
    # Tenancy (ultimat3_jobs.model.tenancy): whom an enqueue is for, the scope a run gets.
    ("TENANT_RESOLVER", "ultimat3_jobs.E063", _callable_path),
    ("TENANT_CONTEXT", "ultimat3_jobs.E064", _callable_path),
    ("TENANT_FROM_REQUEST", "ultimat3_jobs.E065", _callable_path),
    (
        "WEBHOOK_DISABLE_AFTER_FAILURES",
        "ultimat3_jobs.E070",
        number(minimum=1, maximum=100_000, integer=True),
    ),
    ("WEBHOOK_ALLOWED_NETWORKS", "ultimat3_jobs.E071", _networks),
    ("WEBHOOK_CONNECT_TIMEOUT_SECONDS", "ultimat3_jobs.E072", number(minimum=0.01, maximum=300)),
    ("WEBHOOK_READ_TIMEOUT_SECONDS", "ultimat3_jobs.E073", number(minimum=0.01, maximum=300)),
    ("WEBHOOK_SECRET_OVERLAP_SECONDS", "ultimat3_jobs.E074", number(minimum=0, maximum=30 * 86400)),
    # The default purge (ultimat3_jobs.factories.purge): how long finished rows are kept.
    ("RETENTION_COMPLETED_SECONDS", "ultimat3_jobs.E090", or_none(_RETENTION)),
    ("RETENTION_FAILED_SECONDS", "ultimat3_jobs.E091", or_none(_RETENTION)),
    ("RETENTION_CANCELLED_SECONDS", "ultimat3_jobs.E092", or_none(_RETENTION)),
    ("RETENTION_EVENTS_SECONDS", "ultimat3_jobs.E093", or_none(_RETENTION)),
    ("RETENTION_COUNTERS_SECONDS", "ultimat3_jobs.E094", or_none(_RETENTION)),
    ("PURGE_CRON", "ultimat3_jobs.E095", _cron),
    ("PURGE_BATCH_SIZE", "ultimat3_jobs.E096", number(minimum=1, maximum=10_000, integer=True)),
    # Where this process runs, as the backfills' environments name it ("" when unnamed).
    ("ENVIRONMENT", "ultimat3_jobs.E097", _environment),
    # The purge's webhooks target: how long the webhook delivery ledger's rows are kept.
    ("RETENTION_WEBHOOKS_SECONDS", "ultimat3_jobs.E098", or_none(_RETENTION)),
)


def _keys_annotated(annotation: str) -> tuple[str, ...]:
    """The ``Settings`` fields declared with ``annotation`` (a string: this module's annotations
    are not evaluated)."""
    return tuple(f.name for f in fields(Settings) if f.type == annotation)


# The values a setting may give as an int that Settings keeps as a float.
FLOAT_KEYS = _keys_annotated("float")
OPTIONAL_FLOAT_KEYS = _keys_annotated("float | None")
CHECK_NOT_A_MAPPING = "ultimat3_jobs.E001"
CHECK_UNKNOWN_KEY = "ultimat3_jobs.E002"
CHECK_CROSS_FIELD = "ultimat3_jobs.E003"


def validate(raw: Any) -> list[tuple[str, str]]:
    """Every problem of a raw ``ULTIMAT3_JOBS`` value, as ``(check id, message)`` pairs."""
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        return [(CHECK_NOT_A_MAPPING, _problem("*", "must be a dict", raw).replace("['*']", ""))]
    problems: list[tuple[str, str]] = []
    known = {key for key, _, _ in SPEC}
    for key in raw:
        if key not in known:
            rule = f"is not a known key (known keys: {', '.join(sorted(known))})"
            problems.append((CHECK_UNKNOWN_KEY, f"{SETTING_NAME}[{key!r}] {rule}."))
    for key, check_id, validator in SPEC:
        if key in raw:
            message = validator(key, raw[key])
            if message:
                problems.append((check_id, message))
    if not problems:
        problems.extend(_cross_field(raw))
    return problems


def _cross_field(raw: Mapping[str, Any]) -> list[tuple[str, str]]:
    def value(key: str) -> Any:
        return raw.get(key, getattr(Settings(), key.lower()))

    problems = []
    for low, high, why in (
        ("RETRY_BACKOFF_BASE_SECONDS", "RETRY_BACKOFF_CAP_SECONDS", ""),
        ("POLL_FLOOR_SECONDS", "POLL_CEILING_SECONDS", ""),
        ("POLL_FLOOR_SECONDS", "POLL_CEILING_WAKE_SECONDS", ""),
    ):
        if value(high) < value(low):
            rule = f"must be at least {low} ({value(low):g}){why}"
            problems.append((CHECK_CROSS_FIELD, _problem(high, rule, value(high))))
    lease_s, missed = value("SCHEDULER_LEASE_SECONDS"), value("SCHEDULER_MISSED_AFTER_SECONDS")
    if missed < lease_s * 2:
        rule = (
            f"must be at least twice SCHEDULER_LEASE_SECONDS ({lease_s:g}): a follower takes "
            "over up to about 4/3 of a lease after a leader dies, and what fell due meanwhile "
            "must still count as due, not missed"
        )
        problems.append(
            (CHECK_CROSS_FIELD, _problem("SCHEDULER_MISSED_AFTER_SECONDS", rule, missed))
        )
    lease, beat = value("VISIBILITY_TIMEOUT_SECONDS"), value("HEARTBEAT_INTERVAL_SECONDS")
    if beat * 2 > lease:
        rule = (
            f"must be at most half of VISIBILITY_TIMEOUT_SECONDS ({lease:g}), so that one "
            "late heartbeat does not lose a lease"
        )
        problems.append((CHECK_CROSS_FIELD, _problem("HEARTBEAT_INTERVAL_SECONDS", rule, beat)))
    return problems


def raw_setting() -> Any:
    return getattr(django_settings, SETTING_NAME, None)


@cache
def get_settings() -> Settings:
    """The validated settings, read once; :func:`reset_settings` forgets them (on
    ``setting_changed``). Raises :class:`JobsConfigurationError` naming the first problem."""
    raw = raw_setting()
    problems = validate(raw)
    if problems:
        raise JobsConfigurationError(problems[0][1])
    values = {key.lower(): raw[key] for key, _, _ in SPEC if raw and key in raw}
    for key in FLOAT_KEYS + OPTIONAL_FLOAT_KEYS:
        if values.get(key) is not None:
            values[key] = float(values[key])
    limits = values.pop("limits", None)
    if limits is not None:
        values["limits"] = ProcessLimits(**{name.lower(): limits.get(name) for name in LIMIT_KEYS})
    if "webhook_allowed_networks" in values:
        values["webhook_allowed_networks"] = tuple(values["webhook_allowed_networks"])
    return Settings(**values)


def reset_settings() -> None:
    get_settings.cache_clear()
