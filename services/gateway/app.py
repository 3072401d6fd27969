"""The gateway: the upstream browser protocol on /generate-code, plus HTTP routes."""

from __future__ import annotations

import asyncio
import errno
import logging
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
from aiohttp import web
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.common.credentials import CREDENTIALS
from services.common.grpc_server import freeze_startup_heap
from services.common.listen import ListenError
from services.common.metrics import render
from services.common.tracing import outgoing_metadata
from services.common.vendor import load_or_none
from services.gateway.access import PUBLIC_PATHS, access_middleware, allowed_origin
from services.gateway.access_log import AccessLogger
from services.gateway.agents import AgentPool
from services.gateway.design_systems import STORE_NAME
from services.gateway.drain import Sockets
from services.gateway.generate import generate_code
from services.gateway.keys import (
    AGENTS_KEY,
    CHANNEL_KEY,
    LIMITER_KEY,
    METRICS_KEY,
    SETTINGS_KEY,
    SOCKETS_KEY,
)
from services.gateway.limits import ClientLimiter
from services.gateway.mcp_route import PATH as MCP_PATH
from services.gateway.mcp_route import add_mcp
from services.gateway.metrics import GatewayMetrics
from services.gateway.models_route import models
from services.gateway.routes import DESIGN_SYSTEMS_KEY, add_routes, max_request_body_bytes
from services.gateway.settings import GatewaySettings
from services.gateway.vendor_files import add_vendor_routes

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

STATIC_DIR = Path(__file__).parent / "static"
CAPABILITIES_TIMEOUT_S = 10.0
# Below the probes' own timeouts (3 s in deploy/): an agent that does not answer in time
# makes /healthz "degraded", never a probe failure.
HEALTHZ_AGENT_TIMEOUT_S = 2.0


async def metrics_endpoint(request: web.Request) -> web.Response:
    body = render(request.app[METRICS_KEY].registry)
    return web.Response(body=body, content_type="text/plain", charset="utf-8")


async def healthz(request: web.Request) -> web.Response:
    """The probes' route, public: only `{"status": "ok" | "degraded"}`. What fails and why
    (tool names, a browser's launch error, a storage error's path) is `/api/health`'s, which
    the gateway token protects as it protects `/api/capabilities`."""
    return web.json_response({"status": (await health(request.app))["status"]})


async def health_detail(request: web.Request) -> web.Response:
    """`/healthz` with what degrades it: `storage` and `capabilities` (see `health`)."""
    return web.json_response(await health(request.app))


async def health(app: web.Application) -> dict[str, Any]:
    """Both routes answer 200 either way: the gateway still serves generations when its
    storage fails or a tool cannot run, and a restart would mend neither; "degraded" is
    not a probe failure. While the store fails, each call probes it, so the answer turns
    "ok" once the disk is writable again. `capabilities` is what the agent reports of the
    tool workers: a tool they cannot run now (a browser that does not launch) or an agent
    that does not answer degrades."""
    store = app[DESIGN_SYSTEMS_KEY]
    healthy = await store.probe()
    storage = {STORE_NAME: store.health.to_json()}
    capabilities = await agent_capabilities(app, HEALTHZ_AGENT_TIMEOUT_S)
    if "error" in capabilities or capabilities["unavailable"]:
        healthy = False
    return {
        "status": "ok" if healthy else "degraded",
        "storage": storage,
        "capabilities": capabilities,
    }


async def readyz(request: web.Request) -> web.Response:
    """The readiness probe: 503 from the moment a SIGTERM starts the drain, so balancers
    send no new sockets here (/healthz, the liveness one, stays 200 while it drains)."""
    if request.app[SOCKETS_KEY].draining:
        return web.json_response({"status": "draining"}, status=503)
    return web.json_response({"status": "ready"})


async def capabilities(request: web.Request) -> web.Response:
    """What the tool workers can do (upstream's shape, plus the tool list and the tools
    they cannot run now, with the reason)."""
    return web.json_response(await agent_capabilities(request.app, CAPABILITIES_TIMEOUT_S))


async def agent_capabilities(app: web.Application, timeout_s: float) -> dict[str, Any]:
    stub = pb_grpc.AgentServiceStub(app[CHANNEL_KEY])
    try:
        answer = await stub.GetCapabilities(
            pb.GetCapabilitiesRequest(), timeout=timeout_s, metadata=outgoing_metadata()
        )
    except grpc.aio.AioRpcError as exc:
        log.warning("capabilities unavailable", extra={"code": exc.code().name})
        return {
            "screenshot_preview": False,
            "tools": [],
            "unavailable": {},
            "error": "agent unavailable",
        }
    return {
        "screenshot_preview": answer.screenshot_preview,
        "tools": list(answer.tools),
        "unavailable": dict(answer.unavailable),
    }


# The browser params of every credential source, so the built-in UI renders its settings
# fields from the server's list and a new source needs no JS (docs/browser-protocol.md).
PROVIDERS_BODY = {
    "providers": [
        {
            "id": spec.id,
            "displayName": spec.display_name,
            "keyParam": spec.browser_key,
            # null: the browser protocol has no base URL for this source.
            "baseUrlParam": spec.browser_base_url or None,
            "models": spec.for_models,
            "purpose": spec.purpose,
        }
        for spec in CREDENTIALS
    ]
}


async def providers(request: web.Request) -> web.Response:
    """The credential sources a browser may send keys (and base URLs) for."""
    return web.json_response(PROVIDERS_BODY)


async def index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC_DIR / "index.html")


@web.middleware
async def cors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Answers a CORS preflight; `cors_headers` marks every response."""
    if request.method == "OPTIONS":
        return web.Response(status=204)
    return await handler(request)


async def cors_headers(request: web.Request, response: web.StreamResponse) -> None:
    """On every response as it is prepared, so also on those a handler streams itself
    (`/mcp`'s answers), whose headers are gone before a middleware could add any.

    Like upstream, every origin by default (the upstream UI may be served from another
    port); with an allow-list, only the listed origins are echoed."""
    origin = allowed_origin(request, request.app[SETTINGS_KEY].access)
    if origin is not None:
        response.headers["Access-Control-Allow-Origin"] = origin
        if origin != "*":
            response.headers["Vary"] = "Origin"
    response.headers["Access-Control-Allow-Methods"] = "GET, POST, PATCH, DELETE, OPTIONS"
    # The MCP headers too: a browser-based MCP client (from an allowed origin only: `/mcp`
    # refuses others) sends its session and protocol version, and must read the session
    # id the server gives it.
    response.headers["Access-Control-Allow-Headers"] = (
        "Authorization, Content-Type, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID"
    )
    response.headers["Access-Control-Expose-Headers"] = "Mcp-Session-Id"


def create_app(settings: GatewaySettings) -> web.Application:
    app = web.Application(
        # /mcp checks its own token (mcp_route.py), which may differ from the gateway's.
        middlewares=[cors, access_middleware(settings.access, (*PUBLIC_PATHS, MCP_PATH))],
        # Each route reads its body with its own, smaller limit (routes.py); WebSocket
        # frames have theirs (S2C_MAX_FRAME_BYTES).
        client_max_size=max_request_body_bytes(settings),
    )
    app[SETTINGS_KEY] = settings
    app.on_response_prepare.append(cors_headers)
    app[METRICS_KEY] = GatewayMetrics()
    app[LIMITER_KEY] = ClientLimiter(settings.access)
    app[SOCKETS_KEY] = Sockets()

    async def channel_context(app: web.Application) -> AsyncIterator[None]:
        # Channels must be created inside the running loop.
        app[AGENTS_KEY] = pool = AgentPool(settings.agent_addr, settings.grpc_security)
        app[CHANNEL_KEY] = pool.agents[0].channel
        yield
        await pool.close()

    app.cleanup_ctx.append(channel_context)
    app.router.add_get("/generate-code", generate_code)
    add_mcp(app)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/api/health", health_detail)
    app.router.add_get("/metrics", metrics_endpoint)
    app.router.add_get("/api/capabilities", capabilities)
    app.router.add_get("/api/providers", providers)
    app.router.add_get("/api/models", models)
    add_routes(app, settings)
    app.router.add_get("/", index)
    assets = settings.data_dir / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    app.router.add_static("/local-assets", assets)
    app.router.add_static("/static", STATIC_DIR)
    add_vendor_routes(app, load_or_none(settings.vendor_dir))
    return app


async def serve(settings: GatewaySettings) -> None:
    """Serves until SIGTERM/SIGINT, then drains its sockets (drain.py) and exits; logs
    the bound port (port 0 picks a free one)."""
    # aiohttp's keep-alive timer also runs from the moment a connection is made, and a
    # request whose headers never complete leaves the connection idle: this one setting
    # closes half-sent headers and idle keep-alive connections alike.
    app = create_app(settings)
    runner = web.AppRunner(
        app,
        access_log_class=AccessLogger,
        shutdown_timeout=10.0,
        keepalive_timeout=settings.http_idle_timeout_s,
    )
    await runner.setup()
    site = web.TCPSite(runner, settings.host, settings.port)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        why = "the port is taken" if exc.errno == errno.EADDRINUSE else str(exc)
        raise ListenError(f"cannot listen on {settings.host}:{settings.port}: {why}") from None
    port = runner.addresses[0][1]
    log.info("gateway listening", extra={"port": port, "url": f"http://{settings.host}:{port}/"})
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    freeze_startup_heap()
    await stop.wait()
    # Still listening while it drains: probes read 503 from /readyz, new sockets get 503.
    await app[SOCKETS_KEY].drain(settings.drain_s)
    await runner.cleanup()
