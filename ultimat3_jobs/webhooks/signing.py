"""The Standard Webhooks wire format: one HMAC-SHA256 over ``id.timestamp.body``, sent and
checked in three headers.

A delivery carries ``webhook-id`` (the same on every retry of one event), ``webhook-timestamp``
(Unix seconds of this attempt) and ``webhook-signature``: ``v1,<base64 signature>``, one per
secret, separated by spaces (two while a rotated secret is still honoured). A secret is written
``whsec_<base64 key>``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time
from collections.abc import Iterable, Mapping

from ultimat3_jobs.errors import WebhookEndpointInvalid, WebhookSignatureInvalid

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32
TOLERANCE_SECONDS = 300
"""How far a received ``webhook-timestamp`` may be from now, either way (5 minutes)."""
ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
_MAX_SIGNATURES = 10


def new_secret() -> str:
    """A fresh random secret, ``whsec_`` and 32 random bytes in base64."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def secret_key(secret: str) -> bytes:
    """The key bytes of ``secret`` (``whsec_<base64>``, the prefix optional)."""
    if not isinstance(secret, str):
        raise WebhookEndpointInvalid(f"secret must be a string; got {type(secret).__name__}")
    try:
        key = base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if len(key) < 16:
        raise WebhookEndpointInvalid(
            "secret must be whsec_ followed by the base64 of at least 16 bytes",
            field="secret",
            rule="whsec-base64",
        )
    return key


def signature(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """``v1,<base64 HMAC-SHA256>`` of ``msg_id.timestamp.body`` under ``secret``."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def sign(secrets_: Iterable[str], msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three headers of one delivery, signed with each secret of ``secrets_``."""
    return {
        ID_HEADER: msg_id,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: " ".join(signature(s, msg_id, timestamp, body) for s in secrets_),
    }


def _header(headers: Mapping[str, str], name: str) -> str:
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    if not value:
        raise WebhookSignatureInvalid(f"the {name} header is missing")
    return value


def verify(
    secrets_: Iterable[str],
    headers: Mapping[str, str],
    body: bytes,
    *,
    tolerance_seconds: float = TOLERANCE_SECONDS,
    now: float | None = None,
) -> str:
    """Check one received delivery; answer its ``webhook-id``. Raises
    :class:`~ultimat3_jobs.errors.WebhookSignatureInvalid` when a header is missing, the
    timestamp is further than ``tolerance_seconds`` from ``now``, or no ``v1`` signature
    matches one of ``secrets_`` (compared in constant time)."""
    msg_id = _header(headers, ID_HEADER)
    stamp = _header(headers, TIMESTAMP_HEADER)
    offered = _header(headers, SIGNATURE_HEADER).split(" ")[:_MAX_SIGNATURES]
    try:
        timestamp = int(stamp)
    except ValueError:
        raise WebhookSignatureInvalid("the webhook-timestamp header is not Unix seconds") from None
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance_seconds:
        raise WebhookSignatureInvalid(
            f"the webhook-timestamp is more than {tolerance_seconds:g} s from now"
        )
    expected = [signature(s, msg_id, timestamp, body).encode() for s in secrets_]
    matched = False
    for candidate in offered:
        for wanted in expected:
            matched |= hmac.compare_digest(candidate.encode(), wanted)
    if not matched:
        raise WebhookSignatureInvalid("no webhook-signature matches a secret of this receiver")
    return msg_id
