"""The gateway's open /generate-code sockets, and its drain on SIGTERM.

A gateway told to stop never drops a socket: it refuses new ones (and reports not-ready,
app.py's /readyz), tells each resumable socket to reconnect elsewhere with 1012 (service
restart; the built-in UI re-attaches at once, through whatever the load balancer gives it,
and the agent keeps the generation meanwhile), and keeps every upstream-protocol socket,
which cannot resume, until its generation ends or the drain limit passes (then an `error`
frame and 4332). Then the process exits (docs/architecture.md, "Rolling updates").
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from aiohttp import web

from services.gateway.relay import APP_ERROR, Relay

log = logging.getLogger(__name__)

SERVICE_RESTART = 1012  # RFC 6455: the server is restarting; a client should reconnect
RESTARTING = "The gateway is restarting: reconnect to resume."
DRAIN_LIMIT = (
    "The gateway restarted before the generation finished (its drain limit, "
    "S2C_DRAIN_S, passed). Please retry."
)


# How long the sockets still open at the drain limit get to close.
CLOSING_S = 15.0


@dataclass(eq=False)
class _Socket:
    ws: web.WebSocketResponse
    relay: Relay | None = None  # None until its generation streams
    resumable: bool = False


class Sockets:
    """Every open /generate-code socket, by what the drain must do with it."""

    def __init__(self) -> None:
        self.draining = False
        self._open: dict[web.WebSocketResponse, _Socket] = {}
        self._changed = asyncio.Event()

    def __len__(self) -> int:
        return len(self._open)

    @contextmanager
    def held(self, ws: web.WebSocketResponse) -> Iterator[None]:
        """Counts `ws` as open while the handler runs."""
        self._open[ws] = _Socket(ws)
        try:
            yield
        finally:
            del self._open[ws]
            self._changed.set()

    def relaying(self, ws: web.WebSocketResponse, relay: Relay, *, resumable: bool) -> None:
        """`ws` now streams a generation; a resumable one during a drain is sent on at once."""
        socket = self._open[ws]
        socket.relay, socket.resumable = relay, resumable
        if self.draining and resumable:
            relay.interrupt(SERVICE_RESTART, RESTARTING, error=False)

    async def drain(self, limit_s: float) -> float:
        """Returns once every socket closed: resumable ones at once (1012), the others when
        their generation ends, or with an error at `limit_s`. Returns the seconds it took."""
        started = time.monotonic()
        self.draining = True
        for socket in list(self._open.values()):
            if socket.relay is not None and socket.resumable:
                socket.relay.interrupt(SERVICE_RESTART, RESTARTING, error=False)
        log.info("draining", extra={"sockets": len(self._open), "limit_s": limit_s})
        if not await self._all_closed(limit_s):
            closing = []
            for socket in list(self._open.values()):
                if socket.relay is not None:
                    socket.relay.interrupt(APP_ERROR, DRAIN_LIMIT, error=True)
                else:  # nothing streams for it yet (its params or an agent's answer due)
                    closing.append(
                        socket.ws.close(code=SERVICE_RESTART, message=RESTARTING.encode())
                    )
            await asyncio.gather(*closing)
            # Their close handshakes (10 s each at most); a handler still waiting on an
            # agent past this is left to the runner's shutdown, which cancels it.
            await self._all_closed(CLOSING_S)
        seconds = time.monotonic() - started
        log.info("drained", extra={"seconds": round(seconds, 3)})
        return seconds

    async def _all_closed(self, timeout_s: float) -> bool:
        try:
            async with asyncio.timeout(timeout_s):
                while self._open:
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            return False
        return True
