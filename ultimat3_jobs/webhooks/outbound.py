"""``webhook()``: a job that delivers ONE event to ONE endpoint, signed, with a ledger row per
attempt.

The body, in order: find the endpoint; check the tenants (the input's, the run's, the
endpoint's); refuse a disabled endpoint; resolve and check the destination; only then open a
connection (with httpx: connect and read timeouts, redirects not followed, no proxy from the
environment). Every attempt but a cancelled one is written to the ledger before its failure is
raised; a failure that is not the endpoint's (disabled, refused, mismatched) is terminal.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.utils import timezone

try:
    import httpx
except ImportError:  # pragma: no cover - the `webhooks` extra is not installed
    httpx = None  # type: ignore[assignment]

from ultimat3_jobs.conf import Settings, get_settings
from ultimat3_jobs.errors import (
    JobAborted,
    JobDeclarationInvalid,
    JobTenantMismatch,
    Terminal,
    WebhookDeliveryFailed,
    WebhookDestinationRefused,
    WebhookEndpointDisabled,
    WebhookEndpointNotFound,
)
from ultimat3_jobs.model.context import JobContext
from ultimat3_jobs.model.definitions import JobHandle, Retry, job
from ultimat3_jobs.model.job_definition import UNSET, TenantRule
from ultimat3_jobs.types import EnqueueResult
from ultimat3_jobs.webhooks import guard, ledger
from ultimat3_jobs.webhooks.signing import sign
from ultimat3_jobs.webhooks.tables import WebhookEndpoint

EndpointRule = str | Callable[[Mapping[str, Any]], str] | None
USER_AGENT = "ultimat3-jobs-webhooks"
PING_EVENT_TYPE = "webhook.test"


class WebhookHandle:
    """What :func:`webhook` answers: ``send`` enqueues one delivery; ``job`` is its job."""

    def __init__(self, handle: JobHandle, *, event_type: str, endpoint: EndpointRule) -> None:
        self.job = handle
        self.event_type = event_type
        self.endpoint = endpoint

    @property
    def name(self) -> str:
        return self.job.name

    def __repr__(self) -> str:
        return f"<webhook {self.name} {self.event_type}>"

    def send(self, data: Any, *, endpoint: str | None = None, **fields: Any) -> EnqueueResult:
        """Enqueue the delivery of ``data`` (the event's ``data``, JSON) to ``endpoint`` (an
        endpoint's name; the declaration's when it names one). ``fields`` are more input, such
        as the field the tenant rule reads."""
        input: dict[str, Any] = {"data": data, **fields}
        if endpoint is not None:
            input["endpoint"] = endpoint
        return self.job.enqueue(**input)


def webhook(
    name: str,
    *,
    event_type: str,
    tenant: TenantRule = UNSET,
    endpoint: EndpointRule = None,
    queue: str | None = None,
    retry: Retry | None = None,
    timeout: float | timedelta | None = None,
) -> WebhookHandle:
    """Declare the webhook ``name``: a job that POSTs one event of ``event_type`` to one
    endpoint (see the module's docstring)::

        invoice_paid = webhook("invoice-paid", event_type="invoice.paid",
                               tenant=lambda input: input["org_id"])
        invoice_paid.send({"invoice": 42}, endpoint="acme-billing", org_id="acme")

    ``endpoint`` picks the endpoint: ``None`` reads the input's ``endpoint`` field, a string
    names one endpoint for every delivery, a callable decides from the input. ``tenant`` is
    the job's tenant rule; the tenant it answers must be the run's and the endpoint's, or the
    delivery fails with ``X_JOB_TENANT_MISMATCH`` (terminal). ``queue``, ``retry`` and
    ``timeout`` are the job's.
    """
    _require_client(f"webhook {name!r}")
    if not isinstance(event_type, str) or not 1 <= len(event_type) <= 200:
        raise JobDeclarationInvalid(
            f"webhook {name!r}: event_type must be text of 1 to 200 characters; got "
            f"{event_type!r:.80}"
        )
    if endpoint is not None and not isinstance(endpoint, str) and not callable(endpoint):
        raise JobDeclarationInvalid(
            f"webhook {name!r}: endpoint must be None, an endpoint's name or a callable; got "
            f"{endpoint!r:.80}"
        )
    handle: JobHandle | None = None

    def deliver(ctx: JobContext, *, data: Any, **fields: Any) -> dict[str, Any]:
        assert handle is not None
        return _deliver(ctx, handle, event_type, endpoint, {"data": data, **fields})

    deliver.__doc__ = f"Deliver one {event_type} event to one webhook endpoint."
    handle = job(name=name, queue=queue, retry=retry, timeout=timeout, tenant=tenant)(deliver)
    return WebhookHandle(handle, event_type=event_type, endpoint=endpoint)


def _require_client(what: str) -> None:
    if httpx is None:
        raise JobDeclarationInvalid(
            f"{what}: sending webhooks needs httpx; install the `webhooks` extra "
            "(ultimat3-jobs[webhooks])"
        )


def _endpoint_name(rule: EndpointRule, input: Mapping[str, Any]) -> str:
    if isinstance(rule, str):
        return rule
    chosen = rule(input) if callable(rule) else input.get("endpoint")
    if not isinstance(chosen, str):
        raise Terminal(f"the delivery names no endpoint (its input's endpoint is {chosen!r:.80})")
    return chosen


def _deliver(
    ctx: JobContext,
    handle: JobHandle,
    event_type: str,
    rule: EndpointRule,
    input: Mapping[str, Any],
) -> dict[str, Any]:
    settings = get_settings()
    try:
        endpoint = ledger.endpoint_named(_endpoint_name(rule, input))
    except WebhookEndpointNotFound as exc:
        raise Terminal(str(exc)) from exc
    event_id = f"msg_{ctx.job_id.hex}"

    def attempt(status: str, **outcome: Any) -> ledger.Attempt:
        return ledger.Attempt(
            job_id=ctx.job_id,
            event_id=event_id,
            event_type=event_type,
            attempt=ctx.attempt,
            status=status,
            **outcome,
        )

    try:
        _check_tenants(handle, input, ctx, endpoint)
        if not endpoint.enabled:
            raise WebhookEndpointDisabled(
                f"webhook endpoint {endpoint.name!r} is disabled ({endpoint.disabled_reason}); "
                "enable it to deliver again"
            )
        where = guard.destination(endpoint.url, settings.webhook_allowed_networks)
    except (JobTenantMismatch, WebhookEndpointDisabled, WebhookDestinationRefused) as exc:
        ledger.record(endpoint, attempt("refused", error=str(exc)))
        raise
    body = _body(event_type, input["data"])
    code, excerpt, error, elapsed = _post(
        where, _headers(endpoint, event_id, body, where), body, settings
    )
    if ctx.cancelled.is_set():
        raise JobAborted(f"delivery {event_id} to {endpoint.name!r} was cancelled")
    succeeded = code is not None and 200 <= code < 300
    if succeeded:
        ledger.record(endpoint, attempt("succeeded", response_code=code, duration_ms=elapsed))
        return {"endpoint": endpoint.name, "event_id": event_id, "status": code}
    told = error or f"answered {code}"
    disabled = ledger.record(
        endpoint,
        attempt(
            "failed",
            response_code=code,
            duration_ms=elapsed,
            response_excerpt=excerpt,
            error=told,
        ),
    )
    note = "; the endpoint is now disabled" if disabled else ""
    raise WebhookDeliveryFailed(
        f"webhook endpoint {endpoint.name!r} {told}{note}", status=code, endpoint=endpoint.name
    )


@dataclass(frozen=True, slots=True)
class PingResult:
    """What one test ping answered: the status code (``None`` when unreachable), the first
    characters of the response, the transport error, and how long it took."""

    event_id: str
    status: int | None
    excerpt: str
    error: str
    duration_ms: int

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def ping(name: str) -> PingResult:
    """Send one signed ``webhook.test`` event to endpoint ``name`` now, from this process,
    through the destination guard (raises ``X_WEBHOOK_DESTINATION_REFUSED``), whether or not
    the endpoint is enabled; the ledger and the count of failures are left alone."""
    _require_client("ping")
    settings = get_settings()
    endpoint = ledger.endpoint_named(name)
    where = guard.destination(endpoint.url, settings.webhook_allowed_networks)
    event_id = f"msg_test_{uuid.uuid4().hex}"
    body = _body(PING_EVENT_TYPE, {"endpoint": endpoint.name})
    code, excerpt, error, elapsed = _post(
        where, _headers(endpoint, event_id, body, where), body, settings
    )
    return PingResult(event_id, code, excerpt, error, elapsed)


def _body(event_type: str, data: Any) -> bytes:
    event = {"type": event_type, "timestamp": timezone.now().isoformat(), "data": data}
    return json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode()


def _headers(
    endpoint: WebhookEndpoint, event_id: str, body: bytes, where: guard.Destination
) -> dict[str, str]:
    return {
        **sign(ledger.signing_secrets(endpoint), event_id, int(time.time()), body),
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "host": where.host_header,
    }


def _check_tenants(
    handle: JobHandle, input: Mapping[str, Any], ctx: JobContext, endpoint: WebhookEndpoint
) -> None:
    tenant = handle.tenant_for(input)
    if tenant != ctx.tenant_id:
        raise JobTenantMismatch(
            f"the delivery's input is for tenant {tenant!r:.80} but the job runs for "
            f"{ctx.tenant_id!r:.80}"
        )
    if endpoint.tenant_id != tenant:
        raise JobTenantMismatch(
            f"webhook endpoint {endpoint.name!r} belongs to tenant {endpoint.tenant_id!r:.80}, "
            f"not to the delivery's {tenant!r:.80}"
        )


def _post(
    where: guard.Destination, headers: dict[str, str], body: bytes, settings: Settings
) -> tuple[int | None, str, str, int]:
    """POST once; answer (status code or None, response excerpt, transport error or "",
    milliseconds taken)."""
    started = time.monotonic()
    code, excerpt, error = _exchange(where, headers, body, settings)
    return code, excerpt, error, int((time.monotonic() - started) * 1000)


def _exchange(
    where: guard.Destination, headers: dict[str, str], body: bytes, settings: Settings
) -> tuple[int | None, str, str]:
    timeout = httpx.Timeout(
        connect=settings.webhook_connect_timeout_seconds,
        read=settings.webhook_read_timeout_seconds,
        write=settings.webhook_read_timeout_seconds,
        pool=settings.webhook_connect_timeout_seconds,
    )
    extensions = {"sni_hostname": where.host} if where.url.startswith("https:") else {}
    try:
        with (
            httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False) as client,
            client.stream(
                "POST", where.url, content=body, headers=headers, extensions=extensions
            ) as response,
        ):
            excerpt = b""
            for chunk in response.iter_bytes():
                excerpt += chunk
                if len(excerpt) >= ledger.EXCERPT_LIMIT:
                    break
            text = excerpt[: ledger.EXCERPT_LIMIT].decode("utf-8", "replace")
            return response.status_code, text, ""
    except httpx.HTTPError as exc:
        return None, "", f"could not be reached: {type(exc).__name__}: {exc}"[: ledger.ERROR_LIMIT]
