"""Which network addresses untrusted content may reach: only public internet ones.

Model output decides what is fetched in two services: the tool worker's browser renders
it for screenshots, and the gateway's export downloads the files a page references.
Without a guard either could read loopback services, the cluster network or the cloud
metadata endpoint (169.254.169.254). Both use these rules, hence `common`:

* `is_public_url` / `AddressGuard.allows_url` judge a URL before the browser sends it
  (Playwright request routing, see `services/tools/screenshot.py`);
* `resolve_public` gives the addresses a host may be reached at, for callers that then
  connect to a vetted address themselves (the worker's `EgressProxy` in
  `services/tools/egress_proxy.py`, the gateway's export), which also defeats DNS
  rebinding between the check and the connection.

Schemes: only `http`/`https` (and `ws`/`wss`, judged as their http twins) can be public.
`data:`, `blob:` and `about:blank`/`about:srcdoc` carry their content inline or point at
objects the page itself created, so they never touch the network: they are not public URLs,
but `is_page_internal_url` lets the renderer load them. Everything else (`file:`, `ftp:`,
`chrome:`, `filesystem:`, …) is refused.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from types import MappingProxyType
from urllib.parse import urlsplit

# host, port -> every address the name resolves to (as text).
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]

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
