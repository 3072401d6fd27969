"""The worker's egress proxy: its secret, and only vetted addresses reached."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from services.common.netguard import AddressGuard
from services.tools.egress_proxy import EgressProxy
from tests.fakes.resolver import table_resolver

PUBLIC_V4 = "93.184.216.34"


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
    resolver = table_resolver(table, lookups)
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
