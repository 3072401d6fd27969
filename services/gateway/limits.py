"""Per-client limits of the gateway: generations, sockets waiting for their params, URL
captures; and the client address they are kept per (settings: `access.AccessSettings`)."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import hdrs, web

from services.gateway.access import AccessSettings

WINDOW_S = 60.0


def client_identity(request: web.Request, settings: AccessSettings) -> str:
    """The address limits are kept per.

    Not the token: there is one token per deployment, so keying by it would turn the
    per-client limits into one limit for everybody. Behind a proxy (`trust_proxy`) the
    last `X-Forwarded-For` hop is the address that proxy saw; hops before it are
    whatever the client wrote.
    """
    if settings.trust_proxy:
        hops = [
            hop.strip()
            for value in request.headers.getall(hdrs.X_FORWARDED_FOR, [])
            for hop in value.split(",")
            if hop.strip()
        ]
        if hops:
            return hops[-1]
    return request.remote or "unknown"


@dataclass(frozen=True)
class Refusal:
    message: str
    retry_after_s: int | None = None
    status: int = 429  # on an HTTP route: 429 for this client's bound, 503 for everyone's


class _Places:
    """Places held per client, at most `limit` each (0: no limit). A client whose count
    reaches zero is dropped, so the map holds only live clients."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held: dict[str, int] = {}

    def count(self, client: str) -> int:
        return self.held.get(client, 0)

    def full(self, client: str) -> bool:
        return bool(self.limit) and self.count(client) >= self.limit

    def take(self, client: str) -> None:
        self.held[client] = self.count(client) + 1

    def give_back(self, client: str) -> None:
        count = self.count(client)
        if count <= 1:
            self.held.pop(client, None)
        else:
            self.held[client] = count - 1


@dataclass(eq=False)
class Waiting:
    """A socket's place among its client's sockets waiting for their params."""

    client: str
    evict: Callable[[], None]  # tells the socket it lost its place; it then closes


class ClientLimiter:
    """Concurrent generations and generation starts per client, on an injected clock;
    and the sockets each client has waiting for their params.

    Starts are counted over a sliding 60 s window, so "30 per minute" holds for every
    minute, not just on average. One instance per gateway process: with several
    replicas each enforces its own share.
    """

    def __init__(
        self, settings: AccessSettings, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._max_starts = settings.starts_per_minute
        self._clock = clock
        self._active = _Places(settings.max_concurrent_per_client)
        self._max_waiting = settings.max_waiting_per_client
        self._waiting: dict[str, deque[Waiting]] = {}
        self._starts: dict[str, deque[float]] = {}
        self._last_sweep = clock()

    def wait(self, client: str, evict: Callable[[], None]) -> Waiting:
        """A place for a socket waiting for its params; `done_waiting` gives it back.

        At the limit the client's oldest waiting socket is evicted to make room: an
        address many users share (a NAT, a proxy) must not be locked out by one of them
        keeping sockets open, and a newcomer is the one likely to send its params.
        """
        line = self._waiting.setdefault(client, deque())
        if self._max_waiting and len(line) >= self._max_waiting:
            line.popleft().evict()
        place = Waiting(client, evict)
        line.append(place)
        return place

    def done_waiting(self, place: Waiting) -> None:
        line = self._waiting.get(place.client)
        if line is None:
            return
        if place in line:
            line.remove(place)
        if not line:
            del self._waiting[place.client]

    @property
    def max_waiting(self) -> int:
        return self._max_waiting

    def try_start(self, client: str) -> Refusal | None:
        """Takes a generation slot for `client`, or says why not; `finish` gives it back."""
        now = self._clock()
        self._sweep(now)
        if self._active.full(client):
            return Refusal(
                f"Too many concurrent generations from this client "
                f"(limit {self._active.limit}). Wait for one to finish."
            )
        if self._max_starts:
            starts = self._starts.setdefault(client, deque())
            while starts and starts[0] <= now - WINDOW_S:
                starts.popleft()
            if len(starts) >= self._max_starts:
                wait = max(1, math.ceil(starts[0] + WINDOW_S - now))
                return Refusal(
                    f"Too many generation starts (limit {self._max_starts} per minute). "
                    f"Try again in {wait} s.",
                    retry_after_s=wait,
                )
            starts.append(now)
        self._active.take(client)
        return None

    def finish(self, client: str) -> None:
        self._active.give_back(client)

    def held(self, client: str) -> tuple[int, int]:
        """The places `client` holds: (waiting for params, running generations)."""
        return len(self._waiting.get(client, ())), self._active.count(client)

    @property
    def tracked_clients(self) -> int:
        return len(self._active.held.keys() | self._starts.keys() | self._waiting.keys())

    def _sweep(self, now: float) -> None:
        # Forgets clients whose every start has left the window, at most once a window,
        # so memory follows the clients of the last minute, not all clients ever seen.
        if now - self._last_sweep < WINDOW_S:
            return
        self._last_sweep = now
        stale = [
            c for c, starts in self._starts.items() if not starts or starts[-1] <= now - WINDOW_S
        ]
        for client in stale:
            del self._starts[client]


class CaptureLimiter:
    """`/api/screenshot` captures running at once, per client and on this gateway in all.

    A capture holds a browser on a tool worker for up to its deadline; bounded here, one
    client's slow pages cannot queue up the workers' capture slots for everybody.
    """

    def __init__(self, settings: AccessSettings) -> None:
        self._clients = _Places(settings.capture_max_per_client)
        self._limit = settings.capture_max_running
        self._running = 0

    def try_start(self, client: str) -> Refusal | None:
        """Takes a place for `client`'s capture, or says why not; `finish` gives it back."""
        if self._clients.full(client):
            return Refusal(
                f"Too many URL captures from this client at once (limit "
                f"{self._clients.limit}). Wait for one to finish.",
                retry_after_s=5,
            )
        if self._limit and self._running >= self._limit:
            return Refusal(
                f"The server is busy with other URL captures (limit {self._limit} at once). "
                "Please retry in a moment.",
                retry_after_s=5,
                status=503,
            )
        self._clients.take(client)
        self._running += 1
        return None

    def finish(self, client: str) -> None:
        self._clients.give_back(client)
        self._running -= 1
