"""The destination guard: a webhook URL is resolved once, every address it resolves to is
checked, and the request goes to the checked address (not to the name again, which a second
lookup could answer differently).

Refused unless ``WEBHOOK_ALLOWED_NETWORKS`` holds the address: loopback, private, link-local,
cloud metadata, and any other address that is not globally reachable.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from ultimat3_jobs.errors import WebhookDestinationRefused, WebhookEndpointInvalid

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200")
)
"""Cloud metadata services (AWS, GCP and Azure share the first; AWS over IPv6; Alibaba)."""
SCHEMES = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class Destination:
    """Where one request goes: the checked address, and the name it stands for."""

    url: str
    """The URL with its host replaced by the checked address."""
    host: str
    """The name as written in the endpoint's URL (the TLS server name)."""
    host_header: str
    """The name and port as written in the endpoint's URL (the Host header)."""
    address: IPAddress


def resolve_host(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (the system resolver). Tests replace it."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def parse_url(url: str) -> SplitResult:
    """``url`` split, refused unless it is an absolute http(s) URL with a host and no
    credentials."""
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in SCHEMES or not parts.hostname:
        raise WebhookEndpointInvalid(
            f"url must be an absolute http:// or https:// URL with a host; got {url!r:.200}",
            field="url",
            rule="http-url",
        )
    if parts.username is not None or parts.password is not None:
        raise WebhookEndpointInvalid(
            "url must not carry credentials (user:password@); sign deliveries instead",
            field="url",
            rule="no-credentials",
        )
    try:
        parts.port  # noqa: B018 - a port out of range raises here
    except ValueError:
        raise WebhookEndpointInvalid(
            f"url has an invalid port; got {url!r:.200}", field="url", rule="port"
        ) from None
    return parts


def refusal(address: IPAddress, allowed: Iterable[str]) -> str | None:
    """Why ``address`` may not be reached (``None`` when it may)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    for network in allowed:
        if address in ipaddress.ip_network(network, strict=False):
            return None
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    for flag, why in (
        ("is_loopback", "a loopback address"),
        ("is_link_local", "a link-local address"),
        ("is_private", "a private address"),
        ("is_multicast", "a multicast address"),
        ("is_unspecified", "the unspecified address"),
        ("is_reserved", "a reserved address"),
    ):
        if getattr(address, flag):
            return why
    if not address.is_global:
        return "an address that is not globally reachable"
    return None


def destination(url: str, allowed: Iterable[str]) -> Destination:
    """Resolve ``url``'s host and check every address; answer the first. Raises
    :class:`~ultimat3_jobs.errors.WebhookDestinationRefused` (before any connection) when one
    address is refused or the name does not resolve."""
    parts = parse_url(url)
    host = parts.hostname or ""
    port = parts.port or SCHEMES[parts.scheme]
    allowed = tuple(allowed)
    try:
        found = [ipaddress.ip_address(host)]
    except ValueError:
        try:
            found = [ipaddress.ip_address(a.split("%", 1)[0]) for a in resolve_host(host, port)]
        except (OSError, UnicodeError, ValueError) as exc:
            raise WebhookDestinationRefused(f"{host!r} does not resolve: {exc}") from None
    if not found:
        raise WebhookDestinationRefused(f"{host!r} resolves to no address")
    for address in found:
        why = refusal(address, allowed)
        if why is not None:
            raise WebhookDestinationRefused(
                f"{host!r} resolves to {address}, {why}: refused (WEBHOOK_ALLOWED_NETWORKS "
                "lists the networks deliveries may reach despite this rule)"
            )
    address = found[0]
    literal = f"[{address}]" if address.version == 6 else str(address)
    netloc = f"{literal}:{parts.port}" if parts.port else literal
    return Destination(
        url=parts._replace(netloc=netloc).geturl(),
        host=host,
        host_header=parts.netloc,
        address=address,
    )
