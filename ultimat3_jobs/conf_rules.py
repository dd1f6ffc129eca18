"""The validators of ``settings.ULTIMAT3_JOBS``: one per kind of value, each answering a message
that names the key, the rule and the value (``conf.SPEC`` pairs each key with one).

Layer L1 (core): imports the standard library, ``django.conf`` and earlier L1 modules.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings as django_settings

from ultimat3_jobs.records import LIMIT_KEYS
from ultimat3_jobs.types import QUEUE_NAME_PATTERN

SETTING_NAME = "ULTIMAT3_JOBS"

DRIVER_ALIASES: Mapping[str, str] = {
    "postgres": "ultimat3_jobs.drivers.postgres.driver.PostgresDriver",
    "memory": "ultimat3_jobs.drivers.memory.MemoryDriver",
    "redis": "ultimat3_jobs.drivers.redis.RedisDriver",
}


Validator = Callable[[str, Any], str | None]


def _number(value: float) -> str:
    """A bound as a person writes it: 67108864, not 6.71089e+07."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _problem(key: str, rule: str, value: Any) -> str:
    return f"{SETTING_NAME}[{key!r}] {rule}; got {_describe(value)}."


def number(
    *, minimum: float, maximum: float, integer: bool = False, exclusive_minimum: bool = False
) -> Validator:
    """A validator for a finite number (an ``int`` when ``integer``) within a range."""
    kind = "an integer" if integer else "a finite number"
    low = "greater than" if exclusive_minimum else "from"
    rule = f"must be {kind} {low} {_number(minimum)} to {_number(maximum)}"

    def validate(key: str, value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return _problem(key, rule, value)
        if integer and not isinstance(value, int):
            return _problem(key, rule, value)
        if not math.isfinite(value):
            return _problem(key, rule, value)
        too_low = value <= minimum if exclusive_minimum else value < minimum
        if too_low or value > maximum:
            return _problem(key, rule, value)
        return None

    return validate


def or_none(validate: Validator) -> Validator:
    """``validate``, or ``None`` (a retention of ``None`` keeps rows for ever)."""

    def check(key: str, value: Any) -> str | None:
        message = validate(key, value)
        return (
            None
            if value is None or message is None
            else message.replace("must be", "must be None or", 1)
        )

    return check


def _cron(key: str, value: Any) -> str | None:
    if value is None or (isinstance(value, str) and len(value.split()) in (5, 6)):
        return None
    return _problem(key, "must be None (no default purge) or a cron expression of 5 fields", value)


def _environment(key: str, value: Any) -> str | None:
    if isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9_.:-]{0,100}", value):
        return None
    return _problem(key, "must be 0 to 100 characters of letters, digits and _ . : -", value)


def _driver(key: str, value: Any) -> str | None:
    if isinstance(value, str) and (value in DRIVER_ALIASES or "." in value):
        return None
    names = ", ".join(repr(name) for name in DRIVER_ALIASES)
    return _problem(key, f"must be one of {names} or the dotted path of a driver class", value)


def _database(key: str, value: Any) -> str | None:
    aliases = getattr(django_settings, "DATABASES", {})
    if isinstance(value, str) and value in aliases:
        return None
    return _problem(key, f"must name an alias of settings.DATABASES ({', '.join(aliases)})", value)


def _cache_alias(key: str, value: Any) -> str | None:
    # Whether the alias names a django-redis cache is a system check (E054): it matters only
    # for the Redis driver, and CACHES may be read only once settings are complete.
    if isinstance(value, str) and value:
        return None
    return _problem(key, "must name an alias of settings.CACHES (a non-empty string)", value)


def _queue(key: str, value: Any) -> str | None:
    if isinstance(value, str) and re.fullmatch(QUEUE_NAME_PATTERN, value):
        return None
    return _problem(key, f"must be a queue name matching {QUEUE_NAME_PATTERN}", value)


def _tenant(key: str, value: Any) -> str | None:
    if value is None or value == "none":
        return None
    return _problem(
        key, 'must be None (every job declares its tenant) or "none" (single-tenant)', value
    )


def _callable_path(key: str, value: Any) -> str | None:
    if value is None or callable(value) or (isinstance(value, str) and "." in value):
        return None
    return _problem(key, "must be None, a callable, or the dotted path of one", value)


def _limits(key: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) - set(LIMIT_KEYS):
        rule = f"must be a dict of {', '.join(LIMIT_KEYS)}, each None or a number at least 0"
        return _problem(key, rule, value)
    for name in LIMIT_KEYS:
        check = number(minimum=0, maximum=1e6, integer=name not in ("RATE", "BURST"))
        problem = value.get(name) is not None and check(name, value[name])
        if problem:  # the number's rule, then the whole LIMITS value
            named = problem.replace(f"[{name!r}]", f"[{key!r}][{name!r}]", 1)
            return f"{named.rsplit('; got ', 1)[0]}; got {_describe(value)}."
    return None


def _networks(key: str, value: Any) -> str | None:
    rule = 'must be a list of networks ("127.0.0.1/32", "10.0.0.0/8", "::1")'
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        return _problem(key, rule, value)
    for item in value:
        try:
            ipaddress.ip_network(item, strict=False)
        except (TypeError, ValueError):
            return _problem(key, f"{rule}: {_describe(item)} is not one", value)
    return None


_RETENTION = number(minimum=0, maximum=3650 * 86400)
