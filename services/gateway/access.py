"""Who may use the gateway, and how much: access token, origin allow-list, per-client limits.

Environment:

- `S2C_GATEWAY_TOKEN`: when set, every route but the public ones needs it, either as
  `Authorization: Bearer <token>` or as a `token` query parameter. Browsers cannot set
  headers on a WebSocket connect, so a browser client connects to
  `ws://HOST:7001/generate-code?token=<token>`; the built-in UI is opened once as
  `http://HOST:7001/?token=<token>`, keeps the token in sessionStorage and sends it on
  its API calls and WebSocket. At least 8 URL-safe characters, so it survives query
  strings and log redaction unchanged. Public, so that probes, the UI shell and the
  pages it previews load without it: `/`, `/healthz`, `/readyz`, `/static/…`, `/local-assets/…`
  (content-addressed names that cannot be guessed) and `/vendor/…` (the CDN copies the
  preview loads, open to every origin as a CDN is). `/metrics` is not public: it
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
- `S2C_CAPTURE_MAX_PER_CLIENT` (default 2), `S2C_CAPTURE_MAX_RUNNING` (default 4; 0
  turns one off): `/api/screenshot` captures running at once for one client (past it a
  429) and on this gateway in all (past it a 503). A capture of a page that never
  settles holds its place until the capture's deadline.
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
from collections.abc import Mapping
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

PUBLIC_PATHS = ("/", "/healthz", "/readyz")
PUBLIC_PREFIXES = ("/static/", "/local-assets/", "/vendor/")
# Read-only public files that preview frames (an opaque origin, `Origin: null` on their
# CORS requests for module scripts and fonts) load: no origin check, no token.
OPEN_PREFIXES = ("/vendor/",)
TOKEN_QUERY_PARAM = "token"

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
    capture_max_per_client: int = 2
    capture_max_running: int = 4

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
            or self.capture_max_per_client < 0
            or self.capture_max_running < 0
        ):
            raise ValueError(
                "S2C_MAX_CONCURRENT_PER_CLIENT, S2C_STARTS_PER_MINUTE, "
                "S2C_MAX_WAITING_PER_CLIENT, S2C_CAPTURE_MAX_PER_CLIENT and "
                "S2C_CAPTURE_MAX_RUNNING must be >= 0 (0: no limit)"
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
            capture_max_per_client=settings_env.integer(env, "S2C_CAPTURE_MAX_PER_CLIENT", 2),
            capture_max_running=settings_env.integer(env, "S2C_CAPTURE_MAX_RUNNING", 4),
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
            f"capture_max_per_client={self.capture_max_per_client!r}, "
            f"capture_max_running={self.capture_max_running!r}, "
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
        if request.method in (hdrs.METH_GET, hdrs.METH_HEAD) and request.path.startswith(
            OPEN_PREFIXES
        ):
            return await handler(request)
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

    def _reset_heartbeat(self) -> None:
        # aiohttp (3.14) arms the heartbeat again when data arrives after the close (the
        # client's own close frame): the closed socket, its request and buffers then live
        # until that ping and its pong wait have run out, ~30 s. At a few hundred
        # connections a second that held 35-65 MB (tests/e2e/test_fuzz.py).
        if not self.closed:
            super()._reset_heartbeat()

    def _send_heartbeat(self) -> None:
        if self.closed:
            self._heartbeat_cb = None
            return
        super()._send_heartbeat()

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
