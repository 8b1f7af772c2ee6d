"""The SSRF guard refuses every address a user's URL must not reach, whatever spelling it comes in."""

from __future__ import annotations

import gzip
import socket
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator

import httpx
import pytest

from scenarios import outbound


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1/", "loopback"),
        ("http://localhost:8000/hook", "loopback"),
        ("http://[::1]/", "loopback"),
        ("http://10.1.2.3/", "private"),
        ("http://192.168.0.10/", "private"),
        ("http://172.16.5.5/", "private"),
        ("http://169.254.169.254/latest/meta-data/", "metadata"),
        ("http://[fd00:ec2::254]/", "metadata"),
        ("http://[::ffff:10.0.0.1]/", "private"),  # IPv4-mapped IPv6
        ("http://100.64.0.1/", "shared"),
        ("http://0.0.0.0/", "unspecified"),
        ("http://224.0.0.1/", "multicast"),
        ("http://2130706433/", "loopback"),  # 127.0.0.1 as one decimal number
        ("http://[fec0::1]/", "site-local"),
        ("http://[2002:a00:1::]/", "private"),  # 6to4 of 10.0.0.1
    ],
)
def test_private_loopback_link_local_and_metadata_addresses_are_refused(settings, url: str, why: str) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = []
    with pytest.raises(outbound.OutboundRefused, match=why):
        outbound.check_url(url)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("file:///etc/passwd", "http or https"),
        ("gopher://example.com/", "http or https"),
        ("http://user:secret@example.com/", "user name or password"),
        ("http:///nohost", "no host"),
        ("http://example.com:99999/", "port"),
        ("http://does-not-resolve.invalid/", "does not resolve"),
    ],
)
def test_urls_that_are_not_plain_http_targets_are_refused(url: str, why: str) -> None:
    with pytest.raises(outbound.OutboundRefused, match=why):
        outbound.check_url(url)


def test_an_allow_listed_host_passes_and_the_connection_goes_to_the_checked_address(settings) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    target = outbound.check_url("http://127.0.0.1:8080/hook?x=1")
    assert (target.host, target.port, target.address) == ("127.0.0.1", 8080, "127.0.0.1")
    assert outbound._pinned_url(target, target.address) == "http://127.0.0.1:8080/hook?x=1"


def test_a_public_address_passes(settings) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = []
    target = outbound.check_url("https://93.184.215.14/hook")
    assert target.scheme == "https" and target.port == 443


# --- Requests to a hostile or odd server: a raw socket server on loopback, nothing else is contacted ----------


class RawServer:
    """Answers every connection on a loopback port with ``answer(conn)`` (a thread), after reading the head."""

    def __init__(self, answer: Callable[[socket.socket], None], family: int = socket.AF_INET) -> None:
        self.answer = answer
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.bind(("::1" if family == socket.AF_INET6 else "127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.heads: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                try:
                    conn.settimeout(10)
                    head = b""
                    while b"\r\n\r\n" not in head:
                        piece = conn.recv(65536)
                        if not piece:
                            break
                        head += piece
                    self.heads.append(head)
                    self.answer(conn)
                except OSError:
                    pass

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def serve() -> Iterator[Callable[..., RawServer]]:
    servers: list[RawServer] = []

    def start(answer: Callable[[socket.socket], None], family: int = socket.AF_INET) -> RawServer:
        servers.append(RawServer(answer, family))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def _layers_of_gzip(size: int, layers: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\0" * (1 << 20)
    data = b"".join(packer.compress(block) for _ in range(size // len(block))) + packer.flush()
    for _ in range(layers - 1):
        data = gzip.compress(data, 9)
    return data


def test_a_compressed_answer_is_decoded_no_further_than_max_bytes(settings, serve) -> None:
    """256 MiB of zeros in a few hundred kilobytes: read to 1 kB, marked truncated, in a fraction of the memory
    (a decoder that expanded it whole would allocate the 256 MiB). The request asks for no compression."""
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    bomb = _layers_of_gzip(256 << 20, layers=1)

    def answer(conn: socket.socket) -> None:
        head = f"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {len(bomb)}\r\n\r\n"
        conn.sendall(head.encode() + bomb)

    server = serve(answer)
    tracemalloc.start()
    try:
        got = outbound.request("GET", f"http://127.0.0.1:{server.port}/prices.csv", max_bytes=1024)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got.truncated and got.body == b"\0" * 1024
    assert peak < 32 << 20, f"peak {peak / 2**20:.0f} MiB"
    assert b"accept-encoding: identity" in server.heads[0].lower()


def test_an_answer_in_layers_of_compression_is_refused_not_expanded(settings, serve) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    bomb = _layers_of_gzip(64 << 20, layers=2)

    def answer(conn: socket.socket) -> None:
        head = f"HTTP/1.1 200 OK\r\nContent-Encoding: gzip, gzip\r\nContent-Length: {len(bomb)}\r\n\r\n"
        conn.sendall(head.encode() + bomb)

    server = serve(answer)
    with pytest.raises(httpx.DecodingError, match="not read"):
        outbound.request("GET", f"http://127.0.0.1:{server.port}/prices.csv", max_bytes=1024)


def test_the_whole_request_ends_by_its_time_limit_even_while_the_head_never_comes(settings, serve) -> None:
    """A server that sends ``100 Continue`` every 0.2 s (each read well inside the per-read time-out) is cut at
    the request's one deadline, not held for as long as it likes."""
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]

    def answer(conn: socket.socket) -> None:
        until = time.monotonic() + 6.0
        while time.monotonic() < until:
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            time.sleep(0.2)
        conn.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")

    server = serve(answer)
    started = time.monotonic()
    with pytest.raises(httpx.TimeoutException):
        outbound.request("POST", f"http://127.0.0.1:{server.port}/hook", content=b"{}", timeout_s=0.5)
    assert time.monotonic() - started < 2.0


def test_an_answer_that_drips_is_cut_at_the_time_limit(settings, serve) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]

    def answer(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
        for _ in range(60):
            conn.sendall(b"x")
            time.sleep(0.1)

    server = serve(answer)
    started = time.monotonic()
    with pytest.raises(httpx.TimeoutException):
        outbound.request("GET", f"http://127.0.0.1:{server.port}/slow", timeout_s=0.5)
    assert time.monotonic() - started < 2.0


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="this machine has no IPv6 loopback")
def test_an_ipv6_literal_is_sent_in_brackets_in_host_and_a_non_default_port_always(settings, serve) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["::1"]
    server = serve(lambda conn: conn.sendall(b"HTTP/1.1 204 No Content\r\n\r\n"), socket.AF_INET6)
    assert outbound.request("POST", f"http://[::1]:{server.port}/hook", content=b"{}").status == 204
    assert f"\r\nhost: [::1]:{server.port}\r\n".encode() in server.heads[0].lower()
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    assert outbound.check_url("https://127.0.0.1:80/").host_header == "127.0.0.1:80"
    assert outbound.check_url("http://127.0.0.1:80/").host_header == "127.0.0.1"


def test_the_resolvers_order_is_kept_and_the_next_address_is_tried_when_one_cannot_be_reached(
    settings, serve, monkeypatch
) -> None:
    """A dual-stack host lists, say, its IPv4 address first on an IPv4-only machine: that one is tried first,
    not the alphabetically first; and when connecting to an address fails, the next checked one is tried."""
    settings.OUTBOUND_ALLOWED_HOSTS = []
    preferred = [
        (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("54.230.10.20", 443)),
        (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("2600:9000:2345::1", 443, 0, 0)),
    ]
    monkeypatch.setattr(outbound.socket, "getaddrinfo", lambda *a, **k: preferred)
    assert outbound.check_url("https://hooks.example.com/planner").addresses == (
        "54.230.10.20",
        "2600:9000:2345::1",
    )

    settings.OUTBOUND_ALLOWED_HOSTS = ["hooks.test"]
    server = serve(lambda conn: conn.sendall(b"HTTP/1.1 204 No Content\r\n\r\n"))
    both = [  # nothing listens on 127.0.0.2 at that port: connecting there is refused
        (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.2", server.port)),
        (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", server.port)),
    ]
    monkeypatch.setattr(outbound.socket, "getaddrinfo", lambda *a, **k: both)
    answer = outbound.request("POST", f"http://hooks.test:{server.port}/hook", content=b"{}", timeout_s=2)
    assert answer.status == 204 and len(server.heads) == 1
    assert f"host: hooks.test:{server.port}".encode() in server.heads[0].lower()
