"""The W3C ``traceparent`` a job carries from its enqueue to its body (``ctx.traceparent``).

Layer L3 (job model). At enqueue the value comes, in this order, from the caller
(``using(traceparent=...)``, checked strictly), from the callable named by the
``TRACEPARENT`` setting, or from the active OpenTelemetry span when ``opentelemetry-api`` is
installed and in use. A value the caller did not give is never allowed to fail an enqueue: a
malformed one (or a hook that raises) is dropped with a warning (``jobs.traceparent.invalid``)
and the job carries none.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable
from typing import Any

from ultimat3_jobs.conf import Settings
from ultimat3_jobs.errors import JobOptionInvalid, JobsConfigurationError
from ultimat3_jobs.model.hooks import setting_hook

logger = logging.getLogger("ultimat3_jobs.tracing")

TRACEPARENT_PATTERN = r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})"
"""Version 00 of the W3C Trace Context header, lower-case hex only."""
_TRACEPARENT = re.compile(TRACEPARENT_PATTERN)
_ZERO_TRACE_ID = "0" * 32
_ZERO_SPAN_ID = "0" * 16


def check_traceparent(value: Any) -> str | None:
    """``value`` as it is stored: the header itself, or ``None`` when its span id is all
    zeros (there is no parent span to point at). Raises ``ValueError`` naming the rule for
    anything else: not text, not ``00-<32 hex>-<16 hex>-<2 hex>`` in lower case, or an all-zero
    trace id."""
    if not isinstance(value, str):
        raise ValueError(f"a traceparent is text; got {type(value).__name__}")
    match = _TRACEPARENT.fullmatch(value)
    if match is None:
        raise ValueError(
            "a traceparent is '00-<32 hex trace id>-<16 hex span id>-<2 hex flags>' in lower "
            f"case; got {value!r:.80}"
        )
    trace_id, span_id, _ = match.groups()
    if trace_id == _ZERO_TRACE_ID:
        raise ValueError(f"a traceparent's trace id is not all zeros; got {value!r}")
    if span_id == _ZERO_SPAN_ID:
        return None
    return value


def explicit_traceparent(value: Any) -> str | None:
    """A traceparent the caller passed: refused with
    :class:`~ultimat3_jobs.errors.JobOptionInvalid` when malformed."""
    try:
        return check_traceparent(value)
    except ValueError as exc:
        raise JobOptionInvalid(str(exc), field="traceparent", rule="w3c-traceparent") from None


def _source(settings: Settings) -> Callable[..., Any] | None:
    return setting_hook(settings, "TRACEPARENT")


OTEL_TRACE_MODULE = "opentelemetry.trace"


def _from_otel() -> str | None:
    # A span can only be active where the application loaded the OpenTelemetry API itself, so
    # looking it up in sys.modules finds every span there is, and never pays its import (about
    # 0.1 s of each process's start) in a project that does not trace.
    otel_trace: Any = sys.modules.get(OTEL_TRACE_MODULE)
    if otel_trace is None:
        return None
    context = otel_trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def ambient_traceparent(settings: Settings) -> str | None:
    """The traceparent of the code enqueuing now: from the ``TRACEPARENT`` callable if set,
    else from the active OpenTelemetry span, else ``None``. An invalid value is dropped with a
    warning; only a ``TRACEPARENT`` setting that cannot be imported raises (a configuration
    error, which the system checks report first)."""
    source = _source(settings)
    try:
        value = source() if source is not None else _from_otel()
        return None if value is None else check_traceparent(value)
    except Exception as exc:
        # Tracing is an annotation: a hook that raises or answers garbage never costs a job.
        logger.warning("jobs.traceparent.invalid: dropped; the job carries none (%s)", exc)
        return None


def check_traceparent_source(settings: Settings) -> str | None:
    """The problem with the ``TRACEPARENT`` setting, or ``None`` (for the system checks)."""
    try:
        _source(settings)
    except JobsConfigurationError as exc:
        return exc.message
    return None
