"""Egress control for pages we render: only public internet addresses are reachable.

The HTML we screenshot is model output, i.e. untrusted. Without a guard it could make the
tool worker's browser read loopback services, the cluster network or the cloud metadata
endpoint (169.254.169.254) and paint the answer into a screenshot the model can read.

Two layers use the same rules:

* `is_public_url` / `AddressGuard.allows_url` judge a URL before the browser sends it
  (Playwright request routing, see `screenshot.py`);
* `EgressProxy` is the browser's only way out. Chromium sends some requests around
  request interception (`navigator.sendBeacon`, `<a ping>`, `<link rel=prefetch>`), so
  routing alone is not a boundary. The proxy resolves each host itself, vets every address
  and connects to a vetted address, which also defeats DNS rebinding between the check and
  the connection.

Schemes: only `http`/`https` (and `ws`/`wss`, judged as their http twins) can be public.
`data:`, `blob:` and `about:blank`/`about:srcdoc` carry their content inline or point at
objects the page itself created, so they never touch the network: they are not public URLs,
but `is_page_internal_url` lets the renderer load them. Everything else (`file:`, `ftp:`,
`chrome:`, `filesystem:`, …) is refused.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hmac
import ipaddress
import logging
import secrets
import socket
from collections.abc import Awaitable, Callable, Sequence
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from types import MappingProxyType
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

# host, port -> every address the name resolves to (as text).
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
# address, port -> an open connection; a seam so tests can stand in for the internet.
UpstreamOpener = Callable[[str, int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]
# request target, whether it carried the proxy secret: sees every request the proxy reads.
ProxyObserver = Callable[[str, bool], None]

DEFAULT_RESOLVE_TIMEOUT_S = 5.0

# Spelled out rather than left to `ipaddress.is_global`, whose answers have changed between
# Python patch releases (and, in 3.11, still call 6to4 of 127.0.0.1 global).
_BLOCKED_V4: tuple[IPv4Network, ...] = tuple(
    IPv4Network(n)
    for n in (
        "0.0.0.0/8",  # "this network", incl. 0.0.0.0 which Linux routes to localhost
        "10.0.0.0/8",
        "100.64.0.0/10",  # carrier-grade NAT: provider-internal
        "127.0.0.0/8",
        "169.254.0.0/16",  # link-local, incl. the cloud metadata endpoint
        "172.16.0.0/12",
        "192.0.0.0/24",  # IETF protocol assignments
        "192.0.2.0/24",
        "192.88.99.0/24",  # deprecated 6to4 relay anycast
        "192.168.0.0/16",
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, incl. broadcast
    )
)
_BLOCKED_V6: tuple[IPv6Network, ...] = tuple(
    IPv6Network(n)
    for n in (
        "::/96",  # unspecified, loopback and the deprecated IPv4-compatible form
        "64:ff9b:1::/48",  # local-use NAT64
        "100::/64",  # discard-only
        "2001::/23",  # IETF protocol assignments, incl. Teredo tunnels
        "2001:db8::/32",
        "fc00::/7",  # unique local
        "fe80::/10",  # link-local
        "fec0::/10",  # deprecated site-local
        "ff00::/8",  # multicast
    )
)
# Addresses that carry an IPv4 address inside: judged by the address they carry.
_NAT64 = IPv6Network("64:ff9b::/96")

_DEFAULT_PORTS = MappingProxyType({"http": 80, "https": 443, "ws": 80, "wss": 443})
_PAGE_INTERNAL_ABOUT = frozenset({"about:blank", "about:srcdoc"})


def _embedded_v4(ip: IPv6Address) -> IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def is_public_address(address: str | IPv4Address | IPv6Address) -> bool:
    """True only for a globally routable unicast address; anything unparsable is not."""
    try:
        ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    except ValueError:
        return False
    if isinstance(ip, IPv6Address):
        embedded = _embedded_v4(ip)
        if embedded is not None:
            return is_public_address(embedded)
        if ip.scope_id is not None or any(ip in net for net in _BLOCKED_V6):
            return False
    elif any(ip in net for net in _BLOCKED_V4):
        return False
    return ip.is_global and not (ip.is_multicast or ip.is_reserved or ip.is_unspecified)


def is_page_internal_url(url: str) -> bool:
    """True for URLs whose content never comes from the network (see module docstring)."""
    lowered = url.strip().lower()
    if lowered.startswith(("data:", "blob:")):
        return True
    return lowered.split("#", 1)[0].split("?", 1)[0] in _PAGE_INTERNAL_ABOUT


def network_target(url: str) -> tuple[str, int] | None:
    """(host, port) of an http(s)/ws(s) URL; None for other schemes or a malformed URL."""
    try:
        parts = urlsplit(url.strip())
        default_port = _DEFAULT_PORTS.get(parts.scheme.lower())
        if default_port is None or not parts.hostname:
            return None
        return parts.hostname, parts.port or default_port
    except ValueError:  # e.g. a port out of range or a malformed IPv6 literal
        return None


def _is_local_name(host: str) -> bool:
    # Reserved for loopback by RFC 6761; resolvers are free to answer anything for them.
    return host == "localhost" or host.endswith(".localhost")


async def system_resolver(host: str, port: int) -> Sequence[str]:
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


async def resolve_public(
    host: str,
    port: int,
    *,
    resolver: Resolver | None = None,
    timeout_s: float = DEFAULT_RESOLVE_TIMEOUT_S,
) -> tuple[str, ...]:
    """The addresses `host` may be reached at, or () when it must not be reached at all.

    A name is only trusted when *every* address it resolves to is public: a browser or
    proxy may pick any of them, so one private answer is enough to refuse the name.
    Resolution failures and timeouts refuse too.
    """
    host = host.strip().strip("[]").rstrip(".").lower()
    if not host or _is_local_name(host):
        return ()
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        return (str(literal),) if is_public_address(literal) else ()
    try:
        async with asyncio.timeout(timeout_s):
            answers = await (resolver or system_resolver)(host, port)
    except (OSError, TimeoutError, UnicodeError, ValueError):
        return ()
    addresses = tuple(dict.fromkeys(answers))
    if not addresses or not all(is_public_address(a) for a in addresses):
        return ()
    return addresses


async def is_public_url(
    url: str,
    *,
    resolver: Resolver | None = None,
    timeout_s: float = DEFAULT_RESOLVE_TIMEOUT_S,
) -> bool:
    """True when `url` is http(s) (or ws(s)) and its host resolves only to public addresses."""
    target = network_target(url)
    if target is None:
        return False
    return bool(await resolve_public(*target, resolver=resolver, timeout_s=timeout_s))


class AddressGuard:
    """`resolve_public` with a short per-host cache, shared by the router and the proxy.

    The cache keeps a page with fifty CDN requests from resolving the same name fifty
    times (twice each: once for the route check, once in the proxy). Concurrent lookups of
    one host share a single resolution. Only successful answers outlive their lookup.
    """

    def __init__(
        self,
        *,
        resolver: Resolver | None = None,
        timeout_s: float = DEFAULT_RESOLVE_TIMEOUT_S,
        ttl_s: float = 30.0,
    ) -> None:
        self._resolver = resolver
        self._timeout_s = timeout_s
        self._ttl_s = ttl_s
        self._cache: dict[str, tuple[float, asyncio.Future[tuple[str, ...]]]] = {}

    async def vet(self, host: str, port: int) -> tuple[str, ...]:
        loop = asyncio.get_running_loop()
        key = host.lower()
        cached = self._cache.get(key)
        if cached is None or cached[0] < loop.time():
            if len(self._cache) > 1024:
                self._cache.clear()
            lookup = asyncio.ensure_future(
                resolve_public(host, port, resolver=self._resolver, timeout_s=self._timeout_s)
            )
            cached = (loop.time() + self._ttl_s, lookup)
            self._cache[key] = cached
        # A shielded lookup survives one waiter being cancelled; the others still need it.
        addresses = await asyncio.shield(cached[1])
        if not addresses and self._cache.get(key) is cached:
            # Refusals are not remembered: a DNS hiccup must not block a CDN for the TTL.
            del self._cache[key]
        return addresses

    async def allows_url(self, url: str) -> bool:
        target = network_target(url)
        return target is not None and bool(await self.vet(*target))


_HEAD_TIMEOUT_S = 10.0
_RELAY_CHUNK = 64 * 1024
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authorization"})


_AUTH_REALM = "s2c-egress"
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
            writer.write(_status(403, "Forbidden"))
            return None
        connection = await self._connect(addresses, port)
        if connection is None:
            writer.write(_status(502, "Bad Gateway"))
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
