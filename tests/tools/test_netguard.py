from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

import pytest

from services.tools.netguard import (
    AddressGuard,
    EgressProxy,
    Resolver,
    is_page_internal_url,
    is_public_address,
    is_public_url,
    network_target,
)

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


def _resolver(table: dict[str, list[str]], calls: list[str] | None = None) -> Resolver:
    async def resolve(host: str, port: int) -> Sequence[str]:
        if calls is not None:
            calls.append(host)
        if host not in table:
            raise OSError(f"no such host {host}")
        return table[host]

    return resolve


async def test_names_are_judged_by_every_address_they_resolve_to() -> None:
    resolver = _resolver(
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
    guard = AddressGuard(resolver=_resolver({"cdn.example": [PUBLIC_V4]}, calls))
    results = await asyncio.gather(*(guard.vet("cdn.example", 443) for _ in range(5)))
    assert results == [(PUBLIC_V4,)] * 5
    assert await guard.allows_url("https://CDN.example/again")
    assert calls == ["cdn.example"]
    assert not await guard.allows_url("file:///etc/passwd")


async def test_guard_does_not_remember_refusals() -> None:
    table: dict[str, list[str]] = {}
    calls: list[str] = []
    guard = AddressGuard(resolver=_resolver(table, calls))
    assert await guard.vet("flaky.example", 443) == ()
    table["flaky.example"] = [PUBLIC_V4]
    assert await guard.vet("flaky.example", 443) == (PUBLIC_V4,)
    assert calls == ["flaky.example", "flaky.example"]


# --- the egress proxy -------------------------------------------------------------------


@dataclass
class Upstream:
    """Stands in for a public web server; records what reached it."""

    heads: list[bytes] = field(default_factory=list)
    opened: list[tuple[str, int]] = field(default_factory=list)
    port: int = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        self.heads.append(head)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        await writer.drain()
        writer.close()

    async def open(
        self, address: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        self.opened.append((address, port))
        return await asyncio.open_connection("127.0.0.1", self.port)


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    up = Upstream()
    server = await asyncio.start_server(up.serve, "127.0.0.1", 0)
    up.port = server.sockets[0].getsockname()[1]
    async with server:
        yield up


@dataclass
class Proxy:
    host: str
    port: int
    authorization: bytes  # the whole Proxy-Authorization header line, CRLF included
    lookups: list[str]


@pytest.fixture
async def proxy(upstream: Upstream) -> AsyncIterator[Proxy]:
    lookups: list[str] = []
    table = {"public.example": [PUBLIC_V4], "rebind.example": [PUBLIC_V4, "10.0.0.1"]}
    resolver = _resolver(table, lookups)
    egress = EgressProxy(AddressGuard(resolver=resolver), opener=upstream.open)
    url = await egress.start()
    host, port = url.removeprefix("http://").split(":")
    token = base64.b64encode(f"{egress.username}:{egress.password}".encode())
    yield Proxy(host, int(port), b"Proxy-Authorization: Basic " + token + b"\r\n", lookups)
    await egress.close()


async def _exchange(proxy: Proxy, *messages: bytes, authorization: bytes | None = None) -> bytes:
    """Sends `messages`, the proxy's secret added to the first one's head unless given."""
    line = proxy.authorization if authorization is None else authorization
    first, *rest = messages
    request_line, _, headers = first.partition(b"\r\n")
    reader, writer = await asyncio.open_connection(proxy.host, proxy.port)
    try:
        for message in (request_line + b"\r\n" + line + headers, *rest):
            writer.write(message)
        await writer.drain()
        return await reader.read()
    finally:
        writer.close()


async def test_proxy_forwards_plain_http_in_origin_form(proxy: Proxy, upstream: Upstream) -> None:
    reply = await _exchange(
        proxy,
        b"GET http://public.example/a/b?x=1 HTTP/1.1\r\nHost: public.example\r\n"
        b"Proxy-Connection: keep-alive\r\nUser-Agent: t\r\n\r\n",
    )
    assert reply.endswith(b"\r\n\r\nok")
    assert upstream.opened == [(PUBLIC_V4, 80)]
    head = upstream.heads[0].decode()
    assert head.startswith("GET /a/b?x=1 HTTP/1.1\r\n")
    assert "Host: public.example\r\n" in head
    assert "Connection: close\r\n" in head
    assert "Proxy-Connection" not in head


async def test_proxy_tunnels_connect_to_the_vetted_address(
    proxy: Proxy, upstream: Upstream
) -> None:
    reply = await _exchange(
        proxy,
        b"CONNECT public.example:443 HTTP/1.1\r\nHost: public.example:443\r\n\r\n",
        b"TUNNELLED /x\r\n\r\n",
    )
    assert reply.startswith(b"HTTP/1.1 200 Connection Established\r\n\r\nHTTP/1.1 200 OK")
    assert upstream.opened == [(PUBLIC_V4, 443)]
    assert upstream.heads == [b"TUNNELLED /x\r\n\r\n"]


@pytest.mark.parametrize(
    "request_head",
    [
        b"CONNECT 127.0.0.1:22 HTTP/1.1\r\n\r\n",
        b"CONNECT [::1]:443 HTTP/1.1\r\n\r\n",
        b"CONNECT localhost:443 HTTP/1.1\r\n\r\n",
        b"CONNECT rebind.example:443 HTTP/1.1\r\n\r\n",
        b"CONNECT unknown.example:443 HTTP/1.1\r\n\r\n",
        b"GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET http://10.0.0.1/ HTTP/1.1\r\n\r\n",
        b"GET http://2130706433/ HTTP/1.1\r\n\r\n",
    ],
)
async def test_proxy_refuses_non_public_targets(
    proxy: Proxy, upstream: Upstream, request_head: bytes
) -> None:
    reply = await _exchange(proxy, request_head)
    assert reply.startswith(b"HTTP/1.1 403 ")
    assert upstream.opened == []


@pytest.mark.parametrize(
    "request_head",
    [
        b"GARBAGE\r\n\r\n",
        b"GET /relative HTTP/1.1\r\n\r\n",
        b"GET ftp://public.example/ HTTP/1.1\r\n\r\n",
        b"GET file:///etc/passwd HTTP/1.1\r\n\r\n",
        b"GET https://public.example/ HTTP/1.1\r\n\r\n",
    ],
)
async def test_proxy_rejects_malformed_requests(
    proxy: Proxy, upstream: Upstream, request_head: bytes
) -> None:
    reply = await _exchange(proxy, request_head)
    assert reply.startswith(b"HTTP/1.1 400 ")
    assert upstream.opened == []


@pytest.mark.parametrize(
    "authorization",
    [
        b"",
        b"Proxy-Authorization: Basic " + base64.b64encode(b"s2c:guessed") + b"\r\n",
        b"Proxy-Authorization: Bearer not-basic\r\n",
        b"Authorization: Basic " + base64.b64encode(b"s2c:guessed") + b"\r\n",
    ],
)
@pytest.mark.parametrize(
    "request_head",
    [
        b"CONNECT public.example:443 HTTP/1.1\r\nHost: public.example:443\r\n\r\n",
        b"GET http://public.example/ HTTP/1.1\r\nHost: public.example\r\n\r\n",
    ],
)
async def test_proxy_refuses_clients_without_its_secret(
    proxy: Proxy, upstream: Upstream, request_head: bytes, authorization: bytes
) -> None:
    reply = await _exchange(proxy, request_head, authorization=authorization)
    assert reply.startswith(b"HTTP/1.1 407 ")
    assert b'Proxy-Authenticate: Basic realm="s2c-egress"' in reply
    # Refused before anything else: no name looked up, no connection opened.
    assert proxy.lookups == []
    assert upstream.opened == []


async def test_proxy_secret_is_random_and_never_forwarded(proxy: Proxy, upstream: Upstream) -> None:
    other = EgressProxy(AddressGuard())
    assert other.password not in proxy.authorization.decode()
    assert len(other.password) >= 32
    reply = await _exchange(
        proxy, b"GET http://public.example/ HTTP/1.1\r\nHost: public.example\r\n\r\n"
    )
    assert reply.endswith(b"ok")
    assert b"proxy-authorization" not in upstream.heads[0].lower()
