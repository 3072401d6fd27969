"""A test-only allowance for the egress guard: named `.test` hosts served from loopback.

End-to-end tests run the real worker process, which has no in-process seam to hand a fake
resolver to, and must never touch the internet. `S2C_TEST_EGRESS_ROUTES` maps names in the
reserved `.test` TLD (RFC 2606: never on the public internet) to loopback ports, e.g.
`page.test=127.0.0.1:8123`. The guard then sees each such name resolve to a stand-in public
address, and the proxy's connection to that address goes to the loopback port instead.
Every other name and address is judged exactly as without the allowance, so loopback,
private and link-local targets stay refused. The worker logs a warning when it is set.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from services.common.netguard import Resolver, system_resolver
from services.tools.egress_proxy import UpstreamOpener

ENV_NAME = "S2C_TEST_EGRESS_ROUTES"
# Stand-in public addresses, one per mapped name (TEST-NET ranges would be refused).
_STAND_IN_PREFIX = "93.184.216."


def parse_routes(raw: str) -> dict[str, tuple[str, int]]:
    """`name.test=127.0.0.1:PORT,…` → {name: (address, port)}; ValueError says what is wrong."""
    routes: dict[str, tuple[str, int]] = {}
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        name, sep, target = item.partition("=")
        name = name.strip().lower()
        address, colon, port_text = target.strip().rpartition(":")
        if not sep or not colon or not name.endswith(".test"):
            raise ValueError(f"{ENV_NAME}: expected name.test=127.0.0.1:PORT, got {item!r}")
        try:
            loopback = ipaddress.ip_address(address.strip("[]")).is_loopback
            port = int(port_text)
        except ValueError:
            loopback, port = False, 0
        if not loopback or not 0 < port < 65536:
            raise ValueError(f"{ENV_NAME}: {item!r} must map to a loopback address and port")
        routes[name] = (address.strip("[]"), port)
    if len(routes) > 200:
        raise ValueError(f"{ENV_NAME}: at most 200 names")
    return routes


@dataclass(frozen=True, slots=True)
class EgressTestRoutes:
    routes: Mapping[str, tuple[str, int]]

    def _stand_in(self, name: str) -> str:
        return _STAND_IN_PREFIX + str(list(self.routes).index(name) + 1)

    @property
    def resolver(self) -> Resolver:
        async def resolve(host: str, port: int) -> Sequence[str]:
            name = host.rstrip(".").lower()
            if name in self.routes:
                return [self._stand_in(name)]
            return await system_resolver(host, port)

        return resolve

    @property
    def opener(self) -> UpstreamOpener:
        stand_ins = {self._stand_in(name): target for name, target in self.routes.items()}

        async def open_connection(
            address: str, port: int
        ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
            target = stand_ins.get(address)
            if target is not None:
                return await asyncio.open_connection(*target)
            return await asyncio.open_connection(address, port)

        return open_connection
