"""``webhook_receiver()``: a Django view that takes one webhook delivery safely.

In order, and nothing further once one of them refuses:

1. the body is read from the request's stream under ``max_bytes`` (413 past it: a declared
   ``Content-Length`` over it is refused before a byte is read); ``request.body`` is never
   touched, so no other limit or middleware reads it whole;
2. ``verify(headers, raw_bytes)`` checks the signature before anything parses the body (401)
   and answers the event's id and payload from the verified bytes;
3. the event id must match :data:`WEBHOOK_EVENT_ID_PATTERN` (422);
4. the handling job is enqueued with the key ``webhook:<name>:<event id>``, written to the job
   store at once (never deferred to a commit), BEFORE the 2xx: a delivery already received
   answers 200 and makes no new job; a job store that cannot take it answers 503, so that the
   sender tries again.

The handling job must declare its ``payload`` input ``sensitive``: it is redacted wherever an
operator looks (admin, ``manage.py jobs``), and this module never logs it.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import URLPattern, path
from django.views.decorators.csrf import csrf_exempt

from ultimat3_jobs.conf import get_settings
from ultimat3_jobs.errors import (
    DriverUnavailable,
    EnqueueRefused,
    JobDeclarationInvalid,
    JobsError,
    WebhookBodyTooLarge,
    WebhookEventIdInvalid,
    WebhookPayloadInvalid,
    WebhookSignatureInvalid,
)
from ultimat3_jobs.model.definitions import JobHandle
from ultimat3_jobs.models import Job
from ultimat3_jobs.webhooks.signing import TOLERANCE_SECONDS, verify

logger = logging.getLogger("ultimat3_jobs.webhooks")

WEBHOOK_EVENT_ID_PATTERN = r"[A-Za-z0-9_.:-]{1,200}"
"""What a received event id must match: 1 to 200 letters, digits and ``_ . : -``."""
RECEIVER_NAME_PATTERN = r"[a-z0-9][a-z0-9_.-]{0,39}"
DEFAULT_MAX_BYTES = 256 * 1024
MAX_BYTES_LIMIT = 64 * 2**20
CHUNK_BYTES = 64 * 1024
_EVENT_ID = re.compile(WEBHOOK_EVENT_ID_PATTERN)
_RECEIVER_NAME = re.compile(RECEIVER_NAME_PATTERN)


@dataclass(frozen=True, slots=True)
class ReceivedEvent:
    """What a ``verify`` answers: the event's id and payload, read from verified bytes."""

    event_id: str
    payload: Any


Verify = Callable[[Mapping[str, str], bytes], ReceivedEvent]
Secrets = str | Iterable[str] | Callable[[], str | Iterable[str]]


def standard_webhooks_verify(
    secrets: Secrets, *, tolerance_seconds: float = TOLERANCE_SECONDS
) -> Verify:
    """A ``verify`` for Standard Webhooks senders: the ``webhook-signature`` must match one of
    ``secrets`` (``whsec_…``; a list during a rotation; or a callable answering them at each
    delivery) in constant time, and ``webhook-timestamp`` be within ``tolerance_seconds`` of
    now. Answers the ``webhook-id`` as the event id and the body, parsed as JSON, as the
    payload."""

    def verify_standard(headers: Mapping[str, str], body: bytes) -> ReceivedEvent:
        chosen = secrets() if callable(secrets) else secrets
        listed = [chosen] if isinstance(chosen, str) else list(chosen)
        event_id = verify(listed, headers, body, tolerance_seconds=tolerance_seconds)
        try:
            payload = json.loads(body)
        except ValueError:
            raise WebhookPayloadInvalid("the verified body is not JSON") from None
        return ReceivedEvent(event_id=event_id, payload=payload)

    return verify_standard


@dataclass(frozen=True, slots=True)
class Receiver:
    """One declared receiver (see :func:`webhook_receiver`)."""

    name: str
    verify: Verify
    handle_job: JobHandle
    max_bytes: int

    def key(self, event_id: str) -> str:
        return f"webhook:{self.name}:{event_id}"


_receivers: dict[str, Receiver] = {}


def webhook_receiver(
    name: str, *, verify: Verify, handle_job: JobHandle, max_bytes: int = DEFAULT_MAX_BYTES
) -> Callable[[HttpRequest], HttpResponse]:
    """Declare the receiver ``name`` and answer its view (``webhook_receiver_urls()`` mounts
    every declared one)::

        @job(tenant="none", sensitive=["payload"])
        def stripe_event(ctx, *, event_id: str, payload: dict) -> None: ...

        webhook_receiver("stripe", verify=standard_webhooks_verify(SECRET),
                         handle_job=stripe_event, max_bytes=1_000_000)

    ``handle_job`` takes ``event_id`` and ``payload`` and must declare ``payload`` sensitive.
    See the module's docstring for what the view does."""
    where = f"webhook_receiver {name!r}"
    if not isinstance(name, str) or not _RECEIVER_NAME.fullmatch(name):
        raise JobDeclarationInvalid(f"{where}: name must match {RECEIVER_NAME_PATTERN}")
    if not callable(verify):
        raise JobDeclarationInvalid(f"{where}: verify must be a callable (headers, body)")
    if not isinstance(handle_job, JobHandle):
        raise JobDeclarationInvalid(f"{where}: handle_job must be a @job; got {handle_job!r:.80}")
    if "payload" not in handle_job.definition.sensitive:
        raise JobDeclarationInvalid(
            f"{where}: job {handle_job.name!r} must declare sensitive=['payload'] (a received "
            "payload is the sender's data: it is redacted wherever an operator looks)"
        )
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int):
        raise JobDeclarationInvalid(f"{where}: max_bytes must be an integer; got {max_bytes!r}")
    if not 1 <= max_bytes <= MAX_BYTES_LIMIT:
        raise JobDeclarationInvalid(f"{where}: max_bytes must be from 1 to {MAX_BYTES_LIMIT}")
    existing = _receivers.get(name)
    if existing is not None and existing.handle_job is not handle_job:
        raise JobDeclarationInvalid(f"{where} is already declared with another job")
    receiver = Receiver(name=name, verify=verify, handle_job=handle_job, max_bytes=max_bytes)
    _receivers[name] = receiver
    return _view(receiver)


def registered_receivers() -> list[Receiver]:
    """The receivers declared in this process, by name."""
    return [_receivers[name] for name in sorted(_receivers)]


def webhook_receiver_urls() -> list[URLPattern]:
    """One URL per declared receiver, ``<name>/``, named ``webhook-<name>``: include them under
    the prefix you choose (``path("webhooks/", include(webhook_receiver_urls()))``)."""
    return [
        path(f"{receiver.name}/", _view(receiver), name=f"webhook-{receiver.name}")
        for receiver in registered_receivers()
    ]


def _refusal(status: int, exc: JobsError) -> JsonResponse:
    return JsonResponse({"code": exc.code, "message": exc.message}, status=status)


def read_within(request: HttpRequest, max_bytes: int) -> bytes:
    """The request's body, read from its stream in chunks; raises
    :class:`~ultimat3_jobs.errors.WebhookBodyTooLarge` as soon as it passes ``max_bytes``
    (having read at most one chunk more), or before reading when ``Content-Length`` says
    so."""
    declared = request.META.get("CONTENT_LENGTH") or ""
    if declared.isdigit() and int(declared) > max_bytes:
        raise WebhookBodyTooLarge(f"the body is {declared} bytes, over {max_bytes}")
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = request.read(min(CHUNK_BYTES, max_bytes + 1 - size))
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > max_bytes:
            raise WebhookBodyTooLarge(f"the body is over {max_bytes} bytes")
        chunks.append(chunk)


def _view(receiver: Receiver) -> Callable[[HttpRequest], HttpResponse]:
    @csrf_exempt
    def receive(request: HttpRequest) -> HttpResponse:
        if request.method != "POST":
            return HttpResponse(status=405, headers={"Allow": "POST"})
        return _receive(receiver, request)

    receive.__name__ = f"webhook_receiver_{receiver.name.replace('-', '_').replace('.', '_')}"
    return receive


def _receive(receiver: Receiver, request: HttpRequest) -> HttpResponse:
    try:
        raw = read_within(request, receiver.max_bytes)
    except WebhookBodyTooLarge as exc:
        return _refusal(413, exc)
    try:
        event = receiver.verify(request.headers, raw)
    except WebhookSignatureInvalid as exc:
        logger.warning("webhook %s: refused a delivery: %s", receiver.name, exc.message)
        return _refusal(401, exc)
    except WebhookPayloadInvalid as exc:
        return _refusal(400, exc)
    event_id = event.event_id
    if not isinstance(event_id, str) or not _EVENT_ID.fullmatch(event_id):
        return _refusal(
            422,
            WebhookEventIdInvalid(
                f"the event id must match {WEBHOOK_EVENT_ID_PATTERN} (1 to 200 characters)"
            ),
        )
    try:
        status = _enqueue(receiver, event)
    except (DriverUnavailable, DatabaseError) as exc:
        logger.warning("webhook %s: the job store refused %s: %s", receiver.name, event_id, exc)
        return JsonResponse(
            {"code": DriverUnavailable.code, "message": "the job store is unavailable; retry"},
            status=503,
            headers={"Retry-After": "30"},
        )
    except EnqueueRefused as exc:
        return _refusal(400, WebhookPayloadInvalid(f"the payload cannot be a job's input: {exc}"))
    return JsonResponse({"status": status}, status=200)


def _enqueue(receiver: Receiver, event: ReceivedEvent) -> str:
    """Enqueue the event's job unless a job of that key exists (live or finished); answer
    ``"accepted"`` or ``"duplicate"``."""
    key = receiver.key(event.event_id)
    handle = receiver.handle_job
    database = get_settings().database
    if Job.objects.using(database).filter(name=handle.name, idempotency_key=key).exists():
        return "duplicate"
    result = handle.using(idempotency_key=key, publish="now").enqueue(
        event_id=event.event_id, payload=event.payload
    )
    return "duplicate" if result.deduped else "accepted"
