"""ULTIMAT3_JOBS: every key validated, messages name key, rule and value; the same text as a
system check and as ImproperlyConfigured."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from ultimat3_jobs.conf import SPEC, Settings, get_settings, validate
from ultimat3_jobs.errors import JobsConfigurationError

CASES: list[tuple[str, Any, str, str]] = [
    # key, bad value, check id, a fragment of the rule
    ("DRIVER", "mongo", "ultimat3_jobs.E010", "must be one of 'postgres', 'memory'"),
    ("DRIVER", 3, "ultimat3_jobs.E010", "dotted path"),
    ("DATABASE", "missing", "ultimat3_jobs.E011", "must name an alias of settings.DATABASES"),
    ("DEFAULT_QUEUE", "has space", "ultimat3_jobs.E012", "must be a queue name"),
    ("DEFAULT_TENANT", "acme", "ultimat3_jobs.E013", 'or "none"'),
    ("REDIS_ALIAS", "", "ultimat3_jobs.E014", "must name an alias of settings.CACHES"),
    ("DEFAULT_MAX_ATTEMPTS", 0, "ultimat3_jobs.E020", "an integer from 1 to 1000"),
    ("DEFAULT_MAX_ATTEMPTS", 10**9, "ultimat3_jobs.E020", "an integer from 1 to 1000"),
    ("DEFAULT_MAX_ATTEMPTS", 2.5, "ultimat3_jobs.E020", "an integer"),
    ("DEFAULT_MAX_ATTEMPTS", True, "ultimat3_jobs.E020", "an integer"),
    ("INPUT_MAX_BYTES", -1, "ultimat3_jobs.E021", "an integer from 1"),
    ("INPUT_MAX_DEPTH", 0, "ultimat3_jobs.E022", "an integer from 1 to 256"),
    ("VISIBILITY_TIMEOUT_SECONDS", float("nan"), "ultimat3_jobs.E023", "a finite number"),
    ("VISIBILITY_TIMEOUT_SECONDS", float("inf"), "ultimat3_jobs.E023", "a finite number"),
    ("VISIBILITY_TIMEOUT_SECONDS", 0, "ultimat3_jobs.E023", "from 1 to 604800"),
    ("VISIBILITY_TIMEOUT_SECONDS", "30", "ultimat3_jobs.E023", "a finite number"),
    ("RETRY_BACKOFF_BASE_SECONDS", -1, "ultimat3_jobs.E024", "from 0 to 86400"),
    ("RETRY_BACKOFF_CAP_SECONDS", float("inf"), "ultimat3_jobs.E025", "a finite number"),
    ("RETRY_JITTER", 1.5, "ultimat3_jobs.E026", "from 0 to 1"),
    ("WORKER_CONCURRENCY", 0, "ultimat3_jobs.E030", "an integer from 1 to 1000"),
    ("HEARTBEAT_INTERVAL_SECONDS", float("nan"), "ultimat3_jobs.E031", "a finite number"),
    ("RESCUE_INTERVAL_SECONDS", 0, "ultimat3_jobs.E032", "from 0.05 to 3600"),
    ("REGISTRY_INTERVAL_SECONDS", -1, "ultimat3_jobs.E033", "from 0.05 to 3600"),
    ("POLL_FLOOR_SECONDS", 0, "ultimat3_jobs.E034", "from 0.001 to 60"),
    ("POLL_CEILING_SECONDS", float("inf"), "ultimat3_jobs.E035", "a finite number"),
    ("POLL_CEILING_WAKE_SECONDS", 1000, "ultimat3_jobs.E036", "from 0.001 to 600"),
    ("SHUTDOWN_GRACE_SECONDS", -1, "ultimat3_jobs.E037", "from 0 to 86400"),
    ("TIMEOUT_GRACE_SECONDS", "5", "ultimat3_jobs.E038", "a finite number"),
    ("ACK_FLUSH_SECONDS", 2, "ultimat3_jobs.E039", "from 0 to 1"),
    ("PROGRESS_INTERVAL_SECONDS", -0.1, "ultimat3_jobs.E040", "from 0 to 3600"),
    ("OUTBOX_DATABASE", "nope", "ultimat3_jobs.E041", "must name an alias of settings.DATABASES"),
    ("OUTBOX_RETENTION_SECONDS", -5, "ultimat3_jobs.E042", "from 0 to 7776000"),
    ("RELAY_BATCH_SIZE", 1001, "ultimat3_jobs.E043", "an integer from 1 to 1000"),
    ("RELAY_LEASE_SECONDS", 0, "ultimat3_jobs.E044", "from 1 to 3600"),
    ("SCHEDULER_LEASE_SECONDS", 0.5, "ultimat3_jobs.E045", "from 1 to 3600"),
    ("SCHEDULER_MISSED_AFTER_SECONDS", 0, "ultimat3_jobs.E046", "from 1 to 86400"),
    ("TRACEPARENT", 42, "ultimat3_jobs.E060", "must be None, a callable, or the dotted path"),
    ("TRACEPARENT", "no_dot", "ultimat3_jobs.E060", "the dotted path of one"),
    ("TENANT_RESOLVER", 42, "ultimat3_jobs.E063", "must be None, a callable, or the dotted path"),
    ("TENANT_CONTEXT", "no_dot", "ultimat3_jobs.E064", "the dotted path of one"),
    ("TENANT_FROM_REQUEST", 1.5, "ultimat3_jobs.E065", "must be None, a callable"),
    ("LIMITS", {"RATE": -1}, "ultimat3_jobs.E061", "['RATE'] must be a finite number from 0"),
    ("ON_SETTLED_ATTEMPTS", 0, "ultimat3_jobs.E062", "an integer from 1 to 10"),
    ("WEBHOOK_DISABLE_AFTER_FAILURES", 0, "ultimat3_jobs.E070", "an integer from 1 to 100000"),
    ("WEBHOOK_ALLOWED_NETWORKS", "10.0.0.0/8", "ultimat3_jobs.E071", "must be a list of networks"),
    ("WEBHOOK_ALLOWED_NETWORKS", ["10.0.0.0/33"], "ultimat3_jobs.E071", "'10.0.0.0/33' is not one"),
    ("WEBHOOK_CONNECT_TIMEOUT_SECONDS", 0, "ultimat3_jobs.E072", "from 0.01 to 300"),
    ("WEBHOOK_READ_TIMEOUT_SECONDS", 301, "ultimat3_jobs.E073", "from 0.01 to 300"),
    ("WEBHOOK_SECRET_OVERLAP_SECONDS", -1, "ultimat3_jobs.E074", "from 0 to 2592000"),
    ("RETENTION_COMPLETED_SECONDS", -1, "ultimat3_jobs.E090", "must be None or a finite number"),
    ("RETENTION_FAILED_SECONDS", "7d", "ultimat3_jobs.E091", "from 0 to 315360000"),
    ("RETENTION_CANCELLED_SECONDS", float("inf"), "ultimat3_jobs.E092", "must be None or"),
    ("RETENTION_EVENTS_SECONDS", True, "ultimat3_jobs.E093", "must be None or"),
    ("RETENTION_COUNTERS_SECONDS", -5, "ultimat3_jobs.E094", "must be None or"),
    ("PURGE_CRON", "every hour", "ultimat3_jobs.E095", "a cron expression of 5 fields"),
    ("PURGE_BATCH_SIZE", 0, "ultimat3_jobs.E096", "an integer from 1 to 10000"),
    ("ENVIRONMENT", "prod west", "ultimat3_jobs.E097", "letters, digits and _ . : -"),
    ("RETENTION_WEBHOOKS_SECONDS", -1, "ultimat3_jobs.E098", "must be None or a finite number"),
]


@pytest.mark.parametrize(("key", "value", "check_id", "rule"), CASES)
def test_each_bad_value_is_named_with_key_rule_and_value(
    key: str, value: Any, check_id: str, rule: str
) -> None:
    problems = validate({key: value})
    assert len(problems) == 1
    found_id, message = problems[0]
    assert found_id == check_id
    assert f"ULTIMAT3_JOBS[{key!r}]" in message
    assert rule in message
    assert f"got {value!r}"[:40] in message


def test_every_key_has_a_case() -> None:
    assert {key for key, *_ in SPEC} == {key for key, *_ in CASES}


def test_unknown_key_is_refused_with_the_known_keys() -> None:
    [(check_id, message)] = validate({"VISIBLITY_TIMEOUT": 5})
    assert check_id == "ultimat3_jobs.E002"
    assert "'VISIBLITY_TIMEOUT'" in message
    assert "VISIBILITY_TIMEOUT_SECONDS" in message


def test_not_a_mapping_is_refused() -> None:
    [(check_id, message)] = validate(["DRIVER", "postgres"])
    assert check_id == "ultimat3_jobs.E001"
    assert "must be a dict" in message


def test_backoff_cap_below_base_is_refused() -> None:
    [(check_id, message)] = validate(
        {"RETRY_BACKOFF_BASE_SECONDS": 10, "RETRY_BACKOFF_CAP_SECONDS": 5}
    )
    assert check_id == "ultimat3_jobs.E003"
    assert "RETRY_BACKOFF_CAP_SECONDS" in message


def test_cross_field_rules_scheduler() -> None:
    [(check_id, message)] = validate(
        {"SCHEDULER_LEASE_SECONDS": 60, "SCHEDULER_MISSED_AFTER_SECONDS": 60}
    )
    assert check_id == "ultimat3_jobs.E003"
    assert "at least twice SCHEDULER_LEASE_SECONDS (60)" in message


@pytest.mark.parametrize(
    ("raw", "key", "fragment"),
    [
        ({"POLL_FLOOR_SECONDS": 5, "POLL_CEILING_SECONDS": 1}, "POLL_CEILING_SECONDS", "at least"),
        (
            {"VISIBILITY_TIMEOUT_SECONDS": 10, "HEARTBEAT_INTERVAL_SECONDS": 6},
            "HEARTBEAT_INTERVAL_SECONDS",
            "at most half of VISIBILITY_TIMEOUT_SECONDS (10)",
        ),
    ],
)
def test_cross_field_rules(raw: dict[str, Any], key: str, fragment: str) -> None:
    [(check_id, message)] = validate(raw)
    assert check_id == "ultimat3_jobs.E003"
    assert f"ULTIMAT3_JOBS[{key!r}]" in message
    assert fragment in message


def test_defaults_when_the_setting_is_absent() -> None:
    with override_settings():
        from django.conf import settings

        del settings.ULTIMAT3_JOBS
        assert get_settings() == Settings()
    assert Settings().input_max_bytes == 256 * 1024


def test_settings_are_frozen_and_typed() -> None:
    with override_settings(ULTIMAT3_JOBS={"VISIBILITY_TIMEOUT_SECONDS": 30, "DRIVER": "memory"}):
        loaded = get_settings()
        assert loaded.visibility_timeout_seconds == 30.0
        assert isinstance(loaded.visibility_timeout_seconds, float)
        assert loaded.driver_path == "ultimat3_jobs.drivers.memory.MemoryDriver"
        with pytest.raises(AttributeError):
            loaded.driver = "postgres"  # type: ignore[misc]


def test_every_float_setting_given_as_an_int_is_kept_as_a_float() -> None:
    # The keys coerced are read from Settings' annotations: a float setting added later is
    # coerced without being listed a second time.
    floats = [f.name for f in fields(Settings) if f.type in ("float", "float | None")]
    assert len(floats) == 27
    raw = {name.upper(): max(1, int(getattr(Settings(), name) or 60)) for name in floats}
    raw["RETRY_JITTER"] = 1
    with override_settings(ULTIMAT3_JOBS=raw):
        loaded = get_settings()
        for name in floats:
            value = getattr(loaded, name)
            assert isinstance(value, float) and value == raw[name.upper()], name


def test_read_once_and_reset_on_setting_changed() -> None:
    with override_settings(ULTIMAT3_JOBS={"DEFAULT_QUEUE": "one"}):
        assert get_settings().default_queue == "one"
        with override_settings(ULTIMAT3_JOBS={"DEFAULT_QUEUE": "two"}):
            assert get_settings().default_queue == "two"
        assert get_settings().default_queue == "one"


def test_bad_setting_raises_improperly_configured_with_the_check_text() -> None:
    bad = {"INPUT_MAX_BYTES": 0}
    [(_, message)] = validate(bad)
    with override_settings(ULTIMAT3_JOBS=bad):
        with pytest.raises(ImproperlyConfigured) as caught:
            get_settings()
        assert isinstance(caught.value, JobsConfigurationError)
        assert caught.value.code == "X_CONFIG_INVALID"
        assert caught.value.message == message


def test_system_check_reports_the_same_message() -> None:
    bad = {"RETRY_JITTER": -0.5, "DEFAULT_QUEUE": "no spaces please"}
    expected = dict(validate(bad))
    with override_settings(ULTIMAT3_JOBS=bad):
        errors = [e for e in run_checks() if e.id.startswith("ultimat3_jobs.")]
    assert {e.id: e.msg for e in errors} == expected
    assert len(errors) == 2
