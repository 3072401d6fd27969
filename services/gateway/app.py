"""The gateway: the upstream browser protocol on /generate-code, plus HTTP routes."""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import grpc
from aiohttp import WSMsgType, web
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.common.grpc_server import CHANNEL_OPTIONS
from services.common.metrics import GatewayMetrics, render
from services.gateway.frames import FrameBuilder, frame
from services.gateway.params import ParamsError, parse_params
from services.gateway.preview_policy import PreviewPolicyConfig
from services.gateway.relay import APP_ERROR, Relay
from services.gateway.settings import GatewaySettings

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

STATIC_DIR = Path(__file__).parent / "static"
SETTINGS_KEY = web.AppKey("settings", GatewaySettings)
CHANNEL_KEY = web.AppKey("channel", grpc.aio.Channel)
METRICS_KEY = web.AppKey("metrics", GatewayMetrics)


def asset_base_url(request: web.Request) -> str:
    """`scheme://host` as the browser sees us (proxy and tunnel aware, like upstream)."""
    host = request.headers.get("X-Forwarded-Host") or request.headers.get("Host") or request.host
    host = host.split(",")[0].strip()
    proto = request.headers.get("X-Forwarded-Proto", "").split(",")[0].strip()
    if not proto:
        proto = "https" if request.secure else "http"
    proto = {"wss": "https", "ws": "http"}.get(proto, proto)
    return f"{proto}://{host}"


async def generate_code(request: web.Request) -> web.StreamResponse:
    settings = request.app[SETTINGS_KEY]
    ws = web.WebSocketResponse(max_msg_size=settings.max_frame_bytes, heartbeat=20.0)
    await ws.prepare(request)
    try:
        message = await asyncio.wait_for(ws.receive(), settings.params_timeout_s)
    except TimeoutError:
        await _fail(ws, "No params received: send the generation params as the first frame.")
        return ws
    if message.type != WSMsgType.TEXT:
        if message.type == WSMsgType.ERROR or message.type == WSMsgType.CLOSE:
            return ws
        await _fail(ws, "Invalid params: expected a JSON text frame")
        return ws
    try:
        params = json.loads(message.data)
        generate_request = parse_params(params, asset_base_url=asset_base_url(request))
    except json.JSONDecodeError as exc:
        await _fail(ws, f"Invalid params: not valid JSON ({exc.msg} at position {exc.pos})")
        return ws
    except ParamsError as exc:
        await _fail(ws, str(exc))
        return ws

    stub = pb_grpc.AgentServiceStub(request.app[CHANNEL_KEY])
    call = stub.GenerateCode(generate_request)
    builder = FrameBuilder(
        PreviewPolicyConfig(
            min_chars=settings.preview_min_chars,
            min_interval_s=settings.preview_min_interval_s,
            max_bytes_per_s=settings.preview_max_bytes_per_s,
        ),
        settings.coalesce_s,
        time.monotonic,
    )
    metrics = request.app[METRICS_KEY]
    relay = Relay(ws, call, builder, settings.agent_addr, metrics)
    try:
        await relay.run()
        metrics.connections.labels(relay.outcome).inc()
    finally:
        # A browser that closed (4333 or a dropped connection) cancels the generation:
        # cancelling the RPC stops the model streams and tool calls on the agent.
        call.cancel()
    return ws


async def _fail(ws: web.WebSocketResponse, message: str) -> None:
    await ws.send_str(json.dumps(frame("error", None, value=message)))
    await ws.close(code=APP_ERROR)


async def metrics_endpoint(request: web.Request) -> web.Response:
    body = render(request.app[METRICS_KEY].registry)
    return web.Response(body=body, content_type="text/plain", charset="utf-8")


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def capabilities(request: web.Request) -> web.Response:
    return web.json_response({"screenshot_preview": request.app[SETTINGS_KEY].screenshot_available})


async def index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC_DIR / "index.html")


@web.middleware
async def cors(request: web.Request, handler: Handler) -> web.StreamResponse:
    # Upstream allows every origin; the upstream UI may be served from another port.
    if request.method == "OPTIONS":
        response: web.StreamResponse = web.Response(status=204)
    else:
        response = await handler(request)
    response.headers["Access-Control-Allow-Origin"] = "*"
    response.headers["Access-Control-Allow-Methods"] = "GET, POST, PATCH, DELETE, OPTIONS"
    response.headers["Access-Control-Allow-Headers"] = "*"
    return response


def create_app(settings: GatewaySettings) -> web.Application:
    app = web.Application(middlewares=[cors], client_max_size=settings.max_frame_bytes)
    app[SETTINGS_KEY] = settings
    app[METRICS_KEY] = GatewayMetrics()

    async def channel_context(app: web.Application) -> AsyncIterator[None]:
        # Channels must be created inside the running loop.
        app[CHANNEL_KEY] = grpc.aio.insecure_channel(
            settings.agent_addr, options=list(CHANNEL_OPTIONS)
        )
        yield
        await app[CHANNEL_KEY].close()

    app.cleanup_ctx.append(channel_context)
    app.router.add_get("/generate-code", generate_code)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics_endpoint)
    app.router.add_get("/api/capabilities", capabilities)
    app.router.add_get("/", index)
    assets = settings.data_dir / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    app.router.add_static("/local-assets", assets)
    app.router.add_static("/static", STATIC_DIR)
    return app


async def serve(settings: GatewaySettings) -> None:
    """Serves until SIGTERM/SIGINT; logs the bound port (port 0 picks a free one)."""
    runner = web.AppRunner(create_app(settings), shutdown_timeout=10.0)
    await runner.setup()
    site = web.TCPSite(runner, settings.host, settings.port)
    await site.start()
    port = runner.addresses[0][1]
    log.info("gateway listening", extra={"port": port, "url": f"http://{settings.host}:{port}/"})
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()
