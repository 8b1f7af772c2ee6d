"""The SSRF guard refuses every address a user's URL must not reach, whatever spelling it comes in."""

from __future__ import annotations

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
    assert outbound._pinned_url(target) == "http://127.0.0.1:8080/hook?x=1"


def test_a_public_address_passes(settings) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = []
    target = outbound.check_url("https://93.184.215.14/hook")
    assert target.scheme == "https" and target.port == 443
