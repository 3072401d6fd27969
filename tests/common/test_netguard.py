from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from services.common.netguard import (
    AddressGuard,
    is_page_internal_url,
    is_public_address,
    is_public_url,
    network_target,
)
from tests.fakes.resolver import table_resolver

PUBLIC_V4 = "93.184.216.34"

BLOCKED_ADDRESSES = [
    "127.0.0.1",
    "127.255.255.254",
    "0.0.0.0",
    "0.1.2.3",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",
    "169.254.0.1",
    "100.64.0.1",
    "100.127.255.255",
    "192.0.0.9",
    "192.0.2.1",
    "198.18.0.1",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "::",
    "::1",
    "::127.0.0.1",
    "::ffff:127.0.0.1",
    "::ffff:169.254.169.254",
    "::ffff:10.0.0.1",
    "64:ff9b::7f00:1",
    "2002:7f00:1::",
    "2002:a9fe:a9fe::1",
    "2001::1",
    "2001:db8::1",
    "fc00::1",
    "fd12:3456::1",
    "fe80::1",
    "fe80::1%eth0",
    "fec0::1",
    "ff02::1",
    "not an address",
    "",
]

PUBLIC_ADDRESSES = [
    "8.8.8.8",
    "1.1.1.1",
    PUBLIC_V4,
    "172.32.0.1",
    "100.128.0.1",
    "2606:4700:4700::1111",
    "::ffff:8.8.8.8",
    "2002:808:808::1",
    "64:ff9b::808:808",
]


@pytest.mark.parametrize("address", BLOCKED_ADDRESSES)
def test_non_public_addresses_are_blocked(address: str) -> None:
    assert not is_public_address(address)


@pytest.mark.parametrize("address", PUBLIC_ADDRESSES)
def test_public_addresses_are_allowed(address: str) -> None:
    assert is_public_address(address)


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "FILE:///etc/passwd",
        "ftp://8.8.8.8/x",
        "chrome://version",
        "javascript:alert(1)",
        "data:text/html,<p>x</p>",
        "blob:https://example.com/1",
        "about:blank",
        "gopher://8.8.8.8/",
        "http://localhost/",
        "http://LOCALHOST./",
        "http://app.localhost:8080/",
        "http://127.0.0.1:50052/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.5/",
        "ws://127.0.0.1/socket",
        # Legacy numeric spellings of loopback; getaddrinfo parses them without DNS.
        "http://2130706433/",
        "http://0x7f.1/",
        "http://0/",
        "http:///nohost",
        "http://8.8.8.8:99999/",
        "not a url",
    ],
)
async def test_non_public_urls_are_refused(url: str) -> None:
    assert not await is_public_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://8.8.8.8/",
        "https://1.1.1.1:8443/path?q=1",
        "https://[2606:4700:4700::1111]/",
        "ws://8.8.8.8/socket",
        "wss://8.8.8.8/socket",
    ],
)
async def test_public_literal_urls_are_allowed(url: str) -> None:
    assert await is_public_url(url)


async def test_names_are_judged_by_every_address_they_resolve_to() -> None:
    resolver = table_resolver(
        {
            "cdn.example": [PUBLIC_V4, "2606:4700:4700::1111"],
            "internal.example": ["10.0.0.7"],
            "rebind.example": [PUBLIC_V4, "127.0.0.1"],
            "metadata.example": ["169.254.169.254"],
            "empty.example": [],
        }
    )
    assert await is_public_url("https://cdn.example/lib.js", resolver=resolver)
    for host in ("internal.example", "rebind.example", "metadata.example", "empty.example"):
        assert not await is_public_url(f"https://{host}/", resolver=resolver)
    assert not await is_public_url("https://unknown.example/", resolver=resolver)


async def test_a_resolver_that_never_answers_is_refused() -> None:
    never = asyncio.Event()

    async def hang(host: str, port: int) -> Sequence[str]:
        await never.wait()
        return [PUBLIC_V4]

    assert not await is_public_url("https://slow.example/", resolver=hang, timeout_s=0.01)


@pytest.mark.parametrize(
    ("url", "internal"),
    [
        ("data:image/png;base64,AAAA", True),
        ("blob:null/0e9b", True),
        ("about:blank", True),
        ("about:srcdoc", True),
        ("about:config", False),
        ("file:///etc/passwd", False),
        ("https://8.8.8.8/", False),
    ],
)
def test_page_internal_urls(url: str, internal: bool) -> None:
    assert is_page_internal_url(url) is internal


def test_network_target_defaults_ports() -> None:
    assert network_target("https://a.example/x") == ("a.example", 443)
    assert network_target("ws://a.example/x") == ("a.example", 80)
    assert network_target("http://[::1]:81/") == ("::1", 81)
    assert network_target("file:///etc/passwd") is None


async def test_guard_shares_and_caches_lookups() -> None:
    calls: list[str] = []
    guard = AddressGuard(resolver=table_resolver({"cdn.example": [PUBLIC_V4]}, calls))
    results = await asyncio.gather(*(guard.vet("cdn.example", 443) for _ in range(5)))
    assert results == [(PUBLIC_V4,)] * 5
    assert await guard.allows_url("https://CDN.example/again")
    assert calls == ["cdn.example"]
    assert not await guard.allows_url("file:///etc/passwd")


async def test_guard_does_not_remember_refusals() -> None:
    table: dict[str, list[str]] = {}
    calls: list[str] = []
    guard = AddressGuard(resolver=table_resolver(table, calls))
    assert await guard.vet("flaky.example", 443) == ()
    table["flaky.example"] = [PUBLIC_V4]
    assert await guard.vet("flaky.example", 443) == (PUBLIC_V4,)
    assert calls == ["flaky.example", "flaky.example"]
