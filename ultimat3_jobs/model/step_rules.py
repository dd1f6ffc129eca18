"""The rules a durable step's arguments keep, checked before anything is written.

Layer L3 (job model). Each refusal is a :class:`~ultimat3_jobs.errors.StepInvalid` (or, for an
event, :class:`~ultimat3_jobs.errors.EventInvalid`) whose message names the step and the rule.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.errors import EventInvalid, JobInputInvalid, StepInvalid

STEP_NAME_MAX = 200
EVENT_NAME_MAX = 200
EVENT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,199}")
"""An event name or key: 1-200 characters, letters, digits and ``_ . : -``, not starting with a
sign (it is an equality the store's index seeks, and shows in logs)."""

EVENT_TTL_DEFAULT = 7 * 24 * 3600.0
"""How long ``send_event`` keeps an event unless told: a week."""


def check_step_name(name: object, used: set[str]) -> str:
    """A step name: text of 1 to :data:`STEP_NAME_MAX` characters, used once per run."""
    if not isinstance(name, str) or not 1 <= len(name) <= STEP_NAME_MAX or "\x00" in name:
        raise StepInvalid(
            f"a step name is text of 1 to {STEP_NAME_MAX} characters without NUL; got {name!r:.80}",
            field="name",
            rule="step-name",
        )
    if name in used:
        raise StepInvalid(
            f"step {name!r} is used twice in one run of the body: each step needs its own name "
            "(add a counter or the item's id to names made in a loop)",
            field=name,
            rule="step-name-unique",
        )
    return name


def check_callable(step: str, what: str, fn: object) -> None:
    if fn is not None and not callable(fn):
        raise StepInvalid(
            f"step {step!r}: {what} must be callable; got {type(fn).__name__}",
            field=step,
            rule=f"{what}-callable",
        )


def seconds_of(step: str, what: str, value: object) -> float:
    """A duration given as seconds (int or float) or a ``timedelta``: finite, not negative."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise StepInvalid(
            f"step {step!r}: {what} is a number of seconds or a timedelta; got {value!r:.80}",
            field=step,
            rule="duration-type",
        )
    if not math.isfinite(seconds) or seconds < 0:
        raise StepInvalid(
            f"step {step!r}: {what} must be finite and not negative; got {value!r}",
            field=step,
            rule="duration-range",
        )
    return seconds


def aware(step: str, when: object) -> datetime:
    if not isinstance(when, datetime):
        raise StepInvalid(
            f"step {step!r}: sleep_until takes a datetime; got {when!r:.80}",
            field=step,
            rule="wake-type",
        )
    if when.tzinfo is None or when.utcoffset() is None:
        raise StepInvalid(
            f"step {step!r}: sleep_until needs an aware datetime (with a time zone); "
            f"got the naive {when.isoformat()}",
            field=step,
            rule="wake-aware",
        )
    return when


def check_event(event: object, key: object) -> tuple[str, str | None]:
    """An event name and an optional key, each keeping :data:`EVENT_NAME`."""
    for what, value in (("event", event), ("key", key)):
        if what == "key" and value is None:
            continue
        if not isinstance(value, str) or not EVENT_NAME.fullmatch(value):
            raise EventInvalid(
                f"an event's {what} is 1 to {EVENT_NAME_MAX} characters of letters, digits and "
                f"'_ . : -', starting with a letter, digit or '_'; got {value!r:.80}",
                field=what,
                rule="event-name",
            )
    return event, key  # type: ignore[return-value]


def check_ttl(ttl: object) -> float:
    if (
        isinstance(ttl, bool)
        or not isinstance(ttl, (int, float, timedelta))
        or not math.isfinite(
            seconds := (ttl.total_seconds() if isinstance(ttl, timedelta) else float(ttl))
        )
        or seconds <= 0
    ):
        raise EventInvalid(
            f"an event's ttl is a positive finite number of seconds or a timedelta; got {ttl!r}",
            field="ttl",
            rule="ttl-range",
        )
    return seconds


_SCALARS = frozenset({type(None), bool, int, float, str})
"""The types whose values hold no tuple (nothing to turn into a list)."""


def _tuples_as_lists(value: Any) -> Any:
    """A tuple, as a step returns several values, is stored (and so answered) as a list."""
    if isinstance(value, tuple):
        return [_tuples_as_lists(item) for item in value]
    if isinstance(value, list) and any(isinstance(item, (tuple, list, dict)) for item in value):
        return [_tuples_as_lists(item) for item in value]
    if isinstance(value, dict) and any(isinstance(v, (tuple, list, dict)) for v in value.values()):
        return {key: _tuples_as_lists(item) for key, item in value.items()}
    return value


def step_json(step: str, value: Any) -> str:
    """The JSON text a step stores for ``value``, under the input rules and size cap; a tuple
    is stored as a list (the step answers a list, on its first run as on a replay)."""
    settings = get_settings()
    stored = value if type(value) in _SCALARS else _tuples_as_lists(value)
    try:
        return settings.encode_stored(stored, root=f"step {step!r} result")
    except JobInputInvalid as exc:
        raise StepInvalid(
            f"step {step!r}: its result must be JSON, as job input is: {exc.message}",
            field=step,
            rule=str(exc.context.get("rule", "json")),
        ) from exc


def payload_json(payload: Any) -> str:
    settings = get_settings()
    try:
        return settings.encode_stored(payload, root="event payload")
    except JobInputInvalid as exc:
        raise EventInvalid(
            f"an event's payload must be JSON, as job input is: {exc.message}",
            field="payload",
            rule=str(exc.context.get("rule", "json")),
        ) from exc


Thunk = Callable[[], Any]
