"""Who may use the gateway, and how much: access token, origin allow-list, per-client limits.

Environment:

- `S2C_GATEWAY_TOKEN`: when set, every route but the public ones needs it, either as
  `Authorization: Bearer <token>` or as a `token` query parameter. Browsers cannot set
  headers on a WebSocket connect, so a browser client connects to
  `ws://HOST:7001/generate-code?token=<token>`; the built-in UI is opened once as
  `http://HOST:7001/?token=<token>`, keeps the token in sessionStorage and sends it on
  its API calls and WebSocket. At least 8 URL-safe characters, so it survives query
  strings and log redaction unchanged. Public, so that probes, the UI shell and the
  pages it previews load without it: `/`, `/healthz`, `/static/…`, and `/local-assets/…`
  (content-addressed names that cannot be guessed). `/metrics` is not public: it
  reveals traffic; Prometheus sends the token with `authorization: {credentials: …}`.
- `S2C_ALLOWED_ORIGINS`: comma list of `scheme://host[:port]`. When set, a request (a
  WebSocket upgrade included) whose `Origin` is not listed gets 403. Requests without
  an `Origin` are not browsers acting for a page, so they pass. The gateway's own
  origin is not implied: list it when the built-in UI is used, since allowing whatever
  `Host` says would let DNS-rebinding pages in.
- `S2C_MAX_CONCURRENT_PER_CLIENT` (default 4), `S2C_STARTS_PER_MINUTE` (default 30):
  per-client limits on open generations and on generation starts; 0 turns one off.
- `S2C_MAX_WAITING_PER_CLIENT` (default 4; 0 turns it off): sockets of one client
  that are connected but have not sent their params yet. Such a socket holds no
  generation slot: the concurrency limit counts a socket once its params arrived.
- `S2C_MAX_FRAME_BYTES` (default 50 MB): the largest WebSocket frame; params carry
  screenshots and videos as data URLs.
- `S2C_TRUST_PROXY` (`1`): take the client address from `X-Forwarded-For`, which only a
  proxy in front of the gateway can be trusted to set.

Refusals: HTTP 401 / 403 with `{"detail": …}`; on the WebSocket an `error` frame and
close 4332 (the upstream UI shows the message), because a browser never sees the HTTP
status of a refused upgrade. The token never appears in a response or a log line.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from aiohttp import WSCloseCode, WSMsgType, hdrs, web
from aiohttp.http_websocket import WSMessageDecodeText
from aiohttp.typedefs import Handler, Middleware

from services.common import settings_env
from services.common.security import bearer_matches, check_token, token_digest
from services.gateway.frames import frame
from services.gateway.relay import APP_ERROR

log = logging.getLogger(__name__)

PUBLIC_PATHS = ("/", "/healthz")
PUBLIC_PREFIXES = ("/static/", "/local-assets/")
TOKEN_QUERY_PARAM = "token"
WINDOW_S = 60.0

TOKEN_REFUSED = (
    "Missing or invalid access token. Send it as 'Authorization: Bearer <token>' "
    "or add ?token=<token> to the URL."
)
ORIGIN_REFUSED = "Origin not allowed. Add it to S2C_ALLOWED_ORIGINS on the gateway."
_TRUE = frozenset({"1", "true", "yes", "on"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_origin(origin: str) -> str:
    """`scheme://host[:port]`, lowercased, without a default port; ValueError otherwise."""
    parts = urlsplit(origin.strip())
    if (
        parts.scheme.lower() not in _DEFAULT_PORTS
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or parts.username is not None
    ):
        raise ValueError(f"not an origin (scheme://host[:port]): {origin!r}")
    scheme = parts.scheme.lower()
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    port = parts.port
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


@dataclass(frozen=True, repr=False)
class AccessSettings:
    token: str = ""
    allowed_origins: tuple[str, ...] = ()
    max_concurrent_per_client: int = 4
    starts_per_minute: int = 30
    max_frame_bytes: int = 50 * 1024 * 1024
    trust_proxy: bool = False
    max_waiting_per_client: int = 4

    def __post_init__(self) -> None:
        check_token(self.token, "the gateway token (S2C_GATEWAY_TOKEN)")
        try:
            origins = tuple(dict.fromkeys(normalize_origin(o) for o in self.allowed_origins))
        except ValueError as exc:
            raise ValueError(f"S2C_ALLOWED_ORIGINS: {exc}") from None
        # Frozen, but normalizing once here keeps every comparison a plain lookup.
        object.__setattr__(self, "allowed_origins", origins)
        if (
            self.max_concurrent_per_client < 0
            or self.starts_per_minute < 0
            or self.max_waiting_per_client < 0
        ):
            raise ValueError(
                "S2C_MAX_CONCURRENT_PER_CLIENT, S2C_STARTS_PER_MINUTE and "
                "S2C_MAX_WAITING_PER_CLIENT must be >= 0 (0: no limit)"
            )
        if self.max_frame_bytes <= 0:
            raise ValueError("S2C_MAX_FRAME_BYTES must be a positive number of bytes")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AccessSettings:
        env = settings_env.environ(env)
        origins = env.get("S2C_ALLOWED_ORIGINS", "")
        return cls(
            token=env.get("S2C_GATEWAY_TOKEN", "").strip(),
            allowed_origins=tuple(o for o in origins.split(",") if o.strip()),
            max_concurrent_per_client=settings_env.integer(env, "S2C_MAX_CONCURRENT_PER_CLIENT", 4),
            starts_per_minute=settings_env.integer(env, "S2C_STARTS_PER_MINUTE", 30),
            max_waiting_per_client=settings_env.integer(env, "S2C_MAX_WAITING_PER_CLIENT", 4),
            max_frame_bytes=settings_env.integer(env, "S2C_MAX_FRAME_BYTES", 50 * 1024 * 1024),
            trust_proxy=env.get("S2C_TRUST_PROXY", "").strip().lower() in _TRUE,
        )

    def __repr__(self) -> str:
        return (
            f"AccessSettings(token={'<redacted>' if self.token else ''!r}, "
            f"allowed_origins={self.allowed_origins!r}, "
            f"max_concurrent_per_client={self.max_concurrent_per_client!r}, "
            f"starts_per_minute={self.starts_per_minute!r}, "
            f"max_waiting_per_client={self.max_waiting_per_client!r}, "
            f"max_frame_bytes={self.max_frame_bytes!r}, trust_proxy={self.trust_proxy!r})"
        )


# ---------------------------------------------------------------------------------------
# Origins


def origin_allowed(origin: str | None, settings: AccessSettings) -> bool:
    if origin is None or not settings.allowed_origins:
        return True
    try:
        return normalize_origin(origin) in settings.allowed_origins
    except ValueError:
        return False


def allowed_origin(request: web.Request, settings: AccessSettings) -> str | None:
    """The `Access-Control-Allow-Origin` value for `request`, or None to send none.

    `*` without an allow-list (as upstream); with one, the request's own origin when
    listed — then send `Vary: Origin` too, as the answer depends on it.
    """
    if not settings.allowed_origins:
        return "*"
    origin = request.headers.get(hdrs.ORIGIN)
    if origin is not None and origin_allowed(origin, settings):
        return origin
    return None


# ---------------------------------------------------------------------------------------
# Token


def token_presented(request: web.Request, expected_digest: bytes) -> bool:
    header = request.headers.getall(hdrs.AUTHORIZATION, [])
    query = request.query.getall(TOKEN_QUERY_PARAM, [])
    return any(bearer_matches(value, expected_digest) for value in header) or any(
        bearer_matches(f"Bearer {value}", expected_digest) for value in query
    )


def is_websocket_upgrade(request: web.Request) -> bool:
    return request.headers.get(hdrs.UPGRADE, "").lower() == "websocket"


async def refuse_websocket(request: web.Request, message: str) -> web.WebSocketResponse:
    """Accepts the upgrade only to say why: an `error` frame, then close 4332."""
    ws = web.WebSocketResponse()
    await ws.prepare(request)
    await ws.send_str(json.dumps(frame("error", None, value=message)))
    await ws.close(code=APP_ERROR)
    return ws


def _detail(status: int, message: str, **headers: str) -> web.Response:
    return web.json_response({"detail": message}, status=status, headers=headers)


def access_middleware(
    settings: AccessSettings,
    public_paths: tuple[str, ...] = PUBLIC_PATHS,
    public_prefixes: tuple[str, ...] = PUBLIC_PREFIXES,
) -> Middleware:
    """Origin allow-list, then the access token. Put it inside the CORS middleware
    (later in `middlewares=[…]`) so its refusals carry CORS headers the page can read."""
    digest = token_digest(settings.token) if settings.token else None

    def public(path: str) -> bool:
        return path in public_paths or path.startswith(public_prefixes)

    @web.middleware
    async def access(request: web.Request, handler: Handler) -> web.StreamResponse:
        origin = request.headers.get(hdrs.ORIGIN)
        if not origin_allowed(origin, settings):
            log.warning(
                "refused a disallowed origin",
                extra={"origin": (origin or "")[:200], "path": request.path},
            )
            return _detail(403, ORIGIN_REFUSED)
        # CORS preflights never carry credentials; the origin check above covers them.
        if (
            digest is not None
            and request.method != hdrs.METH_OPTIONS
            and not public(request.path)
            and not token_presented(request, digest)
        ):
            if is_websocket_upgrade(request):
                return await refuse_websocket(request, TOKEN_REFUSED)
            return _detail(401, TOKEN_REFUSED, **{hdrs.WWW_AUTHENTICATE: "Bearer"})
        response = await handler(request)
        if digest is not None and not response.prepared:
            # The UI is opened with ?token=…; no Referer may carry that URL elsewhere.
            response.headers.setdefault("Referrer-Policy", "no-referrer")
        return response

    return access


# ---------------------------------------------------------------------------------------
# Frame size


def _size(n: int) -> str:
    mb = n / (1024 * 1024)
    return f"{mb:g} MB" if mb >= 1 else f"{n} bytes"


def frame_too_large_message(limit: int) -> str:
    return (
        f"Message too large: the limit is {_size(limit)} (S2C_MAX_FRAME_BYTES). "
        "Send smaller or fewer images, or a shorter video."
    )


def echoed_close_code(code: object) -> int:
    """The code to answer a client's close with: its own, when that may go on the wire."""
    on_the_wire = isinstance(code, int) and (
        (1000 <= code <= 1014 and code not in (1004, 1005, 1006)) or 3000 <= code <= 4999
    )
    return code if on_the_wire and isinstance(code, int) else WSCloseCode.OK


class FrameLimitedWebSocketResponse(web.WebSocketResponse[Literal[True]]):
    """A WebSocketResponse that says why it drops an oversized or undecodable frame.

    aiohttp refuses a frame over `max_msg_size` as soon as its header arrives (nothing
    of it is buffered) and closes with 1009, and a text frame that is not UTF-8 with
    1007, both without a reason the browser can explain to its user; this sends an
    `error` frame first and closes with 4332.
    """

    def __init__(self, *, max_msg_size: int, **kwargs: Any) -> None:
        # aiohttp's autoclose answers every close with 1000; `receive` echoes instead.
        super().__init__(max_msg_size=max_msg_size, autoclose=False, **kwargs)
        self._frame_limit = max_msg_size

    async def receive(self, timeout: float | None = None) -> WSMessageDecodeText:  # noqa: ASYNC109
        """Answers a close with the client's own code, as upstream's server does: the
        upstream UI tells a cancel (4333) from success (1000) by the code it gets back."""
        message = await super().receive(timeout)
        if message.type == WSMsgType.CLOSE and not self.closed:
            await self.close(code=echoed_close_code(message.data), drain=False)
        return message

    async def close(
        self, *, code: int = WSCloseCode.OK, message: bytes = b"", drain: bool = True
    ) -> bool:
        explanations: dict[int, str] = {
            WSCloseCode.MESSAGE_TOO_BIG: frame_too_large_message(self._frame_limit),
            WSCloseCode.INVALID_TEXT: "Invalid params: the text frame is not valid UTF-8.",
        }
        if code in explanations and not self.closed:
            try:
                await self.send_str(json.dumps(frame("error", None, value=explanations[code])))
            except ConnectionError:
                pass
            else:
                code = APP_ERROR
        return await super().close(code=code, message=message, drain=drain)


# ---------------------------------------------------------------------------------------
# Per-client limits


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


class ClientLimiter:
    """Concurrent generations and generation starts per client, on an injected clock.

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
        self._waiting = _Places(settings.max_waiting_per_client)
        self._starts: dict[str, deque[float]] = {}
        self._last_sweep = clock()

    def try_wait(self, client: str) -> Refusal | None:
        """Takes a place for a socket waiting for its params; `done_waiting` gives it back."""
        if self._waiting.full(client):
            return Refusal(
                f"Too many connections from this client waiting to send their params "
                f"(limit {self._waiting.limit}). Send the params right after connecting."
            )
        self._waiting.take(client)
        return None

    def done_waiting(self, client: str) -> None:
        self._waiting.give_back(client)

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
        return self._waiting.count(client), self._active.count(client)

    @property
    def tracked_clients(self) -> int:
        return len(self._active.held.keys() | self._starts.keys() | self._waiting.held.keys())

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
