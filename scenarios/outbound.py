"""Requests Planner makes to addresses its users give it (webhook endpoints, price feeds), without letting
them reach what they should not: no server-side request forgery.

Every request:

* resolves the URL's host **when it is made** and refuses it when any address it resolves to is private,
  loopback, link-local (cloud metadata services live there: 169.254.169.254, fd00:ec2::254), shared
  (100.64/10), multicast, reserved or unspecified, unless the host or the address is allow-listed in
  ``settings.OUTBOUND_ALLOWED_HOSTS`` (a test suite's local receiver);
* connects to the address it checked (the host name goes in ``Host`` and, for HTTPS, in the TLS server
  name), so a DNS answer that changes between the check and the connection (rebinding) cannot redirect it;
* follows no redirect, reads at most ``max_bytes`` of the answer, and gives up once ``timeout_s`` has passed
  while the answer is read (the connection and each read have ``timeout_s`` too, so the worst case is a few
  times ``timeout_s``, never unbounded).

``check_url`` is the same check for the moment a URL is registered (refused at creation as well).
"""

from __future__ import annotations

import functools
import ipaddress
import socket
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import httpx
from django.conf import settings

SCHEMES = ("http", "https")
# Addresses no user URL may reach even where the range is otherwise public in some networks.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200")
)
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_MAX_BYTES = 64 * 1024


class OutboundRefused(ValueError):
    """The URL may not be requested (its scheme, its host or what the host resolves to)."""


@dataclass(frozen=True)
class Target:
    url: str
    scheme: str
    host: str
    port: int
    address: str  # the checked address the connection goes to


@dataclass(frozen=True)
class Answer:
    status: int
    latency_s: float
    body: bytes  # at most max_bytes
    truncated: bool
    headers: Mapping[str, str]


def _allowed() -> frozenset[str]:
    raw = settings.OUTBOUND_ALLOWED_HOSTS or ()
    return frozenset(str(h).strip().lower() for h in raw if str(h).strip())


def _forbidden(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why an address may not be reached, or None."""
    if isinstance(address, ipaddress.IPv6Address):
        # IPv4 reached through IPv6 (mapped, 6to4, Teredo) is judged as the IPv4 address it reaches.
        embedded = address.ipv4_mapped or address.sixtofour or (address.teredo[1] if address.teredo else None)
        if embedded is not None:
            return _forbidden(embedded)
        if address.is_site_local:
            return "a site-local address"
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    # The most specific name first: 0.0.0.0 and 127.0.0.1 are also "private" to Python.
    for name, flag in (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("reserved", address.is_reserved),
        ("private", address.is_private),
    ):
        if flag:
            return f"a {name} address"
    if isinstance(address, ipaddress.IPv4Address) and address in ipaddress.ip_network("100.64.0.0/10"):
        return "a shared (carrier-grade NAT) address"
    if not address.is_global:  # site-local, 6to4 and other ranges that are not the public internet
        return "a non-global address"
    return None


def check_url(url: str) -> Target:
    """Parse, resolve and check ``url``; raises ``OutboundRefused`` with the reason."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise OutboundRefused(f"the URL must be http or https, not {scheme or 'missing'!r}")
    if parts.username or parts.password:
        raise OutboundRefused("the URL must not carry a user name or password")
    host = (parts.hostname or "").lower()
    if not host:
        raise OutboundRefused("the URL has no host")
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        raise OutboundRefused("the URL's port is not a number from 1 to 65535") from None
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise OutboundRefused(f"the host {host!r} does not resolve") from None
    addresses = sorted({str(info[4][0]).split("%")[0] for info in infos})
    allowed = _allowed()
    for text in addresses:
        reason = _forbidden(ipaddress.ip_address(text))
        if reason is not None and host not in allowed and text not in allowed:
            raise OutboundRefused(
                f"the host {host!r} resolves to {text}, {reason}; such addresses are never requested "
                "(an operator can allow-list a host with OUTBOUND_ALLOWED_HOSTS)"
            )
    return Target(url=url, scheme=scheme, host=host, port=port, address=addresses[0])


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context per process: building one loads the CA bundle, about 20 ms, which would
    otherwise be paid by every webhook delivery."""
    return httpx.create_ssl_context()


def _pinned_url(target: Target) -> str:
    parts = urlsplit(target.url)
    address = f"[{target.address}]" if ":" in target.address else target.address
    return urlunsplit((parts.scheme, f"{address}:{target.port}", parts.path or "/", parts.query, ""))


def request(
    method: str,
    url: str,
    *,
    content: bytes = b"",
    headers: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Answer:
    """Send one request to ``url`` after ``check_url`` (at this moment), to the checked address, following
    no redirect; raises ``OutboundRefused`` for a refused URL and ``httpx.HTTPError`` when the request
    fails (connection refused, time-out)."""
    target = check_url(url)
    sent_headers = {
        **(headers or {}),
        "Host": target.host if target.port in (80, 443) else f"{target.host}:{target.port}",
    }
    started = time.perf_counter()
    with httpx.Client(
        timeout=timeout_s, follow_redirects=False, trust_env=False, verify=_tls_context()
    ) as client:
        request_ = client.build_request(
            method,
            _pinned_url(target),
            content=content,
            headers=sent_headers,
            extensions={"sni_hostname": target.host} if target.scheme == "https" else {},
        )
        response = client.send(request_, stream=True)
        try:
            body = b""
            truncated = False
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > max_bytes:
                    body, truncated = body[:max_bytes], True
                    break
                if time.perf_counter() - started > timeout_s:  # a server that drips its answer
                    raise httpx.ReadTimeout(f"the answer took longer than {timeout_s:g} s", request=request_)
            return Answer(
                status=response.status_code,
                latency_s=time.perf_counter() - started,
                body=body,
                truncated=truncated,
                headers=dict(response.headers),
            )
        finally:
            response.close()
