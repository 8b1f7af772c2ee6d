"""Requests Planner makes to addresses its users give it (webhook endpoints, price feeds), without letting
them reach what they should not: no server-side request forgery.

Every request:

* resolves the URL's host **when it is made** and refuses it when any address it resolves to is private,
  loopback, link-local (cloud metadata services live there: 169.254.169.254, fd00:ec2::254), shared
  (100.64/10), multicast, reserved or unspecified, unless the host or the address is allow-listed in
  ``settings.OUTBOUND_ALLOWED_HOSTS`` (a test suite's local receiver);
* connects to the addresses it checked, in the resolver's order of preference, the next one only when the
  connection to one fails (the host name goes in ``Host`` and, for HTTPS, in the TLS server name), so a DNS
  answer that changes between the check and the connection (rebinding) cannot redirect it;
* follows no redirect, asks for the answer uncompressed and reads at most ``max_bytes`` of it (a gzip or
  deflate answer sent anyway is decoded at most ``max_bytes`` far: a small compressed answer cannot expand
  into gigabytes), and gives up once ``timeout_s`` has passed since it began: connecting, sending, waiting
  for the answer's head (however many ``100 Continue`` lines come first) and reading its body share that one
  deadline, which every socket operation is bounded by.

``check_url`` is the same check for the moment a URL is registered (refused at creation as well).
"""

from __future__ import annotations

import functools
import ipaddress
import socket
import ssl
import time
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpcore
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
    addresses: tuple[str, ...]  # the checked addresses, in the resolver's order of preference

    @property
    def address(self) -> str:
        """The address a connection tries first."""
        return self.addresses[0]

    @property
    def host_header(self) -> str:
        """``Host``: the name (an IPv6 literal in brackets), with the port unless it is the scheme's own."""
        name = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return name if self.port == default else f"{name}:{self.port}"


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
    # the resolver's order (RFC 6724's preference), each address once
    addresses = tuple(dict.fromkeys(str(info[4][0]).split("%")[0] for info in infos))
    if not addresses:
        raise OutboundRefused(f"the host {host!r} does not resolve")
    allowed = _allowed()
    for text in addresses:
        reason = _forbidden(ipaddress.ip_address(text))
        if reason is not None and host not in allowed and text not in allowed:
            raise OutboundRefused(
                f"the host {host!r} resolves to {text}, {reason}; such addresses are never requested "
                "(an operator can allow-list a host with OUTBOUND_ALLOWED_HOSTS)"
            )
    return Target(url=url, scheme=scheme, host=host, port=port, addresses=addresses)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context per process: building one loads the CA bundle, about 20 ms, which would
    otherwise be paid by every webhook delivery."""
    return httpx.create_ssl_context()


def _pinned_url(target: Target, address: str) -> str:
    parts = urlsplit(target.url)
    literal = f"[{address}]" if ":" in address else address
    return urlunsplit((parts.scheme, f"{literal}:{target.port}", parts.path or "/", parts.query, ""))


def _time_left(deadline: float, timeout: float | None, error: type[Exception]) -> float:
    """The seconds a socket operation may take: its own time-out, cut to what is left before ``deadline``;
    raises ``error`` (an httpcore time-out) once the deadline has passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the request took longer than its time limit")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read, write and TLS handshake ends by the request's deadline."""

    def __init__(self, stream: httpcore.NetworkStream, deadline: float) -> None:
        self._stream = stream
        self._deadline = deadline

    def _left(self, timeout: float | None, error: type[Exception]) -> float:
        return _time_left(self._deadline, timeout, error)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, self._left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, self._left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        left = self._left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname, left), self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore.SyncBackend):
    """httpcore's own sockets, each bounded by one deadline for the whole request (``request``)."""

    def __init__(self, deadline: float) -> None:
        self._deadline = deadline

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        timeout = _time_left(self._deadline, timeout, httpcore.ConnectTimeout)
        stream = super().connect_tcp(host, port, timeout, local_address, socket_options)
        return _DeadlineStream(stream, self._deadline)


def _client(timeout_s: float, deadline: float) -> httpx.Client:
    transport = httpx.HTTPTransport(verify=_tls_context(), trust_env=False)
    # httpx builds its httpcore pool without a way to pass a network backend: the same pool, with one
    transport._pool = httpcore.ConnectionPool(
        ssl_context=_tls_context(), network_backend=_DeadlineBackend(deadline)
    )
    return httpx.Client(timeout=timeout_s, follow_redirects=False, trust_env=False, transport=transport)


class _CappedDecoder:
    """The answer's body as sent (``Accept-Encoding: identity`` was asked), or, for a server that compressed
    it anyway, decoded with zlib at most ``limit`` bytes far (one gzip or deflate layer; others refused)."""

    def __init__(self, encoding: str, limit: int, request: httpx.Request) -> None:
        codings = [
            c.strip().lower() for c in encoding.split(",") if c.strip() and c.strip().lower() != "identity"
        ]
        self._zlib = None
        if codings == ["gzip"] or codings == ["x-gzip"]:
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif codings == ["deflate"]:
            self._zlib = zlib.decompressobj()
        elif codings:
            raise httpx.DecodingError(
                f"the answer is sent with Content-Encoding {encoding!r}, which is not read", request=request
            )
        self._limit = limit
        self._request = request

    def decode(self, data: bytes, have: int) -> bytes:
        if self._zlib is None:
            return data
        try:
            return self._zlib.decompress(data, max(1, self._limit + 1 - have))
        except zlib.error as exc:
            raise httpx.DecodingError(
                f"the answer's compressed body is not valid: {exc}", request=self._request
            ) from None


def request(
    method: str,
    url: str,
    *,
    content: bytes = b"",
    headers: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Answer:
    """Send one request to ``url`` after ``check_url`` (at this moment), to the checked addresses in turn
    (the next only when connecting to one fails), following no redirect, all within ``timeout_s``; raises
    ``OutboundRefused`` for a refused URL and ``httpx.HTTPError`` when the request fails (connection refused,
    time-out, an answer it cannot decode)."""
    target = check_url(url)
    sent_headers = {**(headers or {}), "Host": target.host_header, "Accept-Encoding": "identity"}
    started = time.perf_counter()
    deadline = time.monotonic() + timeout_s
    with _client(timeout_s, deadline) as client:
        for index, address in enumerate(target.addresses):
            request_ = client.build_request(
                method,
                _pinned_url(target, address),
                content=content,
                headers=sent_headers,
                extensions={"sni_hostname": target.host} if target.scheme == "https" else {},
            )
            try:
                response = client.send(request_, stream=True)
            except httpx.ConnectError:
                if index + 1 == len(target.addresses):
                    raise
                continue  # this address cannot be reached from here: the next checked one
            try:
                decoder = _CappedDecoder(response.headers.get("content-encoding", ""), max_bytes, request_)
                body = b""
                truncated = False
                for chunk in response.iter_raw():
                    body += decoder.decode(chunk, len(body))
                    if len(body) > max_bytes:
                        body, truncated = body[:max_bytes], True
                        break
                return Answer(
                    status=response.status_code,
                    latency_s=time.perf_counter() - started,
                    body=body,
                    truncated=truncated,
                    headers=dict(response.headers),
                )
            finally:
                response.close()
    raise AssertionError("unreachable: check_url gives at least one address")  # pragma: no cover
