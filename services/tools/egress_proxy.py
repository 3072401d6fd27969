"""The tool worker's browser's only way out: a loopback forward proxy that vets every target.

Chromium sends some requests around request interception (`navigator.sendBeacon`,
`<a ping>`, `<link rel=prefetch>`), so Playwright routing alone is not a boundary. The
proxy resolves each host itself through `services.common.netguard` (the address rules the
gateway's export uses too), and connects only to a vetted address.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hmac
import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence
from urllib.parse import urlsplit

from services.common.netguard import AddressGuard, network_target

log = logging.getLogger(__name__)

# address, port -> an open connection; a seam so tests can stand in for the internet.
UpstreamOpener = Callable[[str, int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]
# request target, whether it carried the proxy secret: sees every request the proxy reads.
ProxyObserver = Callable[[str, bool], None]

_HEAD_TIMEOUT_S = 10.0
_RELAY_CHUNK = 64 * 1024
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authorization"})


_AUTH_REALM = "s2c-egress"
# On the proxy's own 403/502 answers, so a URL capture can tell them from the site's.
EGRESS_HEADER = "X-S2C-Egress"
# Answered by the proxy itself once authorized: a context's first navigation there makes
# Chromium cache the proxy credentials (see EgressProxy). `.invalid` can never resolve.
AUTH_PROBE_URL = "http://s2c-egress-auth.invalid/"
_AUTH_PROBE_TARGET = ("s2c-egress-auth.invalid", 80)


def _status(code: int, reason: str, extra: str = "") -> bytes:
    head = f"HTTP/1.1 {code} {reason}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n"
    return head.encode()


def _header(header_block: str, wanted: str) -> str | None:
    for line in header_block.split("\r\n"):
        name, _, value = line.partition(":")
        if name.strip().lower() == wanted:
            return value.strip()
    return None


def _split_authority(authority: str) -> tuple[str, int] | None:
    # urlsplit understands "[::1]:443"-style authorities once given a scheme.
    return network_target(f"https://{authority}")


class EgressProxy:
    """A minimal HTTP forward proxy (CONNECT tunnels and absolute-form requests) on loopback.

    Only its own browser may use it: every request must carry `Proxy-Authorization` with
    this process's random secret (`username`/`password`, made at construction and handed
    to Chromium through Playwright's proxy option, which answers the 407 challenge).
    Without it the answer is 407 before any name is resolved or connection opened, so
    another local process cannot borrow the worker's egress. Chromium only asks for proxy
    credentials on a top-level navigation, not for the subresources of an `about:blank`
    page, so each browser context first navigates to `AUTH_PROBE_URL` (answered here, with
    nothing sent anywhere); from then on Chromium sends the cached credentials with every
    request of that context, CONNECT included.

    Every connection is refused unless its target host is vetted by the guard; it then
    connects to one of the vetted addresses, never to a name. Plain-HTTP requests are sent
    upstream with `Connection: close`, so one proxied connection carries one vetted
    exchange and a second request on the same socket can only reach the same public host.
    """

    def __init__(
        self,
        guard: AddressGuard,
        *,
        opener: UpstreamOpener | None = None,
        connect_timeout_s: float = 10.0,
        observer: ProxyObserver | None = None,
    ) -> None:
        self._guard = guard
        self._observer = observer
        self._opener: UpstreamOpener = opener or _open_connection
        self._connect_timeout_s = connect_timeout_s
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self.url = ""
        self.username = "s2c"
        self.password = secrets.token_urlsafe(32)
        self._credential = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()

    def _authorized(self, header_block: str) -> bool:
        value = _header(header_block, "proxy-authorization")
        if value is None:
            return False
        scheme, _, credential = value.partition(" ")
        return scheme.lower() == "basic" and hmac.compare_digest(
            credential.strip().encode(), self._credential.encode()
        )

    async def start(self) -> str:
        """Listen on an ephemeral loopback port; returns the proxy URL for the browser."""
        if self._server is None:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
            port = self._server.sockets[0].getsockname()[1]
            self.url = f"http://127.0.0.1:{port}"
        return self.url

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        upstream: asyncio.StreamWriter | None = None
        try:
            upstream = await self._handle(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass
        finally:
            for w in (writer, upstream):
                if w is not None:
                    w.close()
            if task is not None:
                self._handlers.discard(task)

    async def _handle(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> asyncio.StreamWriter | None:
        async with asyncio.timeout(_HEAD_TIMEOUT_S):
            head = await reader.readuntil(b"\r\n\r\n")
        request_line, _, header_block = head[:-4].decode("latin-1").partition("\r\n")
        fields = request_line.split(" ")
        if len(fields) != 3:
            writer.write(_status(400, "Bad Request"))
            return None
        method, target, version = fields
        authorized = self._authorized(header_block)
        if self._observer is not None:
            self._observer(target, authorized)
        if not authorized:
            writer.write(
                _status(
                    407,
                    "Proxy Authentication Required",
                    f'Proxy-Authenticate: Basic realm="{_AUTH_REALM}"\r\n',
                )
            )
            return None
        if network_target(target) == _AUTH_PROBE_TARGET:  # the page itself or its favicon
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 0\r\n"
                b"Connection: close\r\n\r\n"
            )
            return None
        forward: bytes | None = None
        if method.upper() == "CONNECT":
            destination = _split_authority(target)
        else:
            destination = network_target(target) if target.lower().startswith("http:") else None
            if destination is not None:
                forward = _origin_form_head(method, target, version, header_block)
        if destination is None:
            writer.write(_status(400, "Bad Request"))
            return None
        host, port = destination
        addresses = await self._guard.vet(host, port)
        if not addresses:
            log.debug("egress refused: %s:%d", host, port)
            writer.write(_status(403, "Forbidden", f"{EGRESS_HEADER}: refused\r\n"))
            return None
        connection = await self._connect(addresses, port)
        if connection is None:
            writer.write(_status(502, "Bad Gateway", f"{EGRESS_HEADER}: unreachable\r\n"))
            return None
        up_reader, up_writer = connection
        if forward is None:
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        else:
            up_writer.write(forward)
        await _relay(reader, writer, up_reader, up_writer)
        return up_writer

    async def _connect(
        self, addresses: Sequence[str], port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        for address in addresses:
            try:
                async with asyncio.timeout(self._connect_timeout_s):
                    return await self._opener(address, port)
            except (OSError, TimeoutError):
                continue
        return None


async def _open_connection(
    address: str, port: int
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(address, port)


def _origin_form_head(method: str, target: str, version: str, header_block: str) -> bytes:
    parts = urlsplit(target)
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    lines = [f"{method} {path} {version}"]
    has_host = False
    for line in header_block.split("\r\n"):
        name = line.partition(":")[0].strip().lower()
        if not name or name in _HOP_BY_HOP:
            continue
        has_host = has_host or name == "host"
        lines.append(line)
    if not has_host:
        lines.append(f"Host: {parts.netloc.rpartition('@')[2]}")
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _relay(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
) -> None:
    # Browsers never half-close a proxy connection, so the first side to finish ends both.
    tasks = [
        asyncio.create_task(_pump(reader, up_writer)),
        asyncio.create_task(_pump(up_reader, writer)),
    ]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while chunk := await source.read(_RELAY_CHUNK):
            sink.write(chunk)
            await sink.drain()
