"""`/mcp`: the MCP server (services/mcp) over Streamable HTTP, inside the gateway.

The SDK's transport is an ASGI app; `_asgi` hands it each aiohttp request, streaming its
answer (SSE for a tool call's progress) back as it comes. Before it: the origin check
and the token (mcp_access.py); inside a tool call: the per-client generation limits of
the WebSocket (limits.py), by the client address this module puts in the ASGI scope.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, MutableMapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from aiohttp import hdrs, web
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.common.security import bearer_matches, token_digest
from services.gateway.access import ORIGIN_REFUSED, origin_allowed
from services.gateway.keys import AGENTS_KEY, CAPTURES_KEY, LIMITER_KEY, SETTINGS_KEY
from services.gateway.limits import CaptureLimiter, ClientLimiter, client_identity
from services.mcp.server import build_server
from services.mcp.settings import McpSettings

PATH = "/mcp"
CLIENT_STATE = "s2c_client"  # the ASGI scope's `state` entry naming the client
MANAGER_KEY = web.AppKey("mcp", StreamableHTTPSessionManager)
TOKEN_REFUSED = "Missing or invalid MCP token. Send it as 'Authorization: Bearer <token>'."


class PoolRoute:
    """The gateway's agents, as the MCP tools reach them: a new generation goes to the
    next agent in turn that admits it, an old one to the agent its id names."""

    def __init__(self, app: web.Application) -> None:
        self._app = app

    def in_turn(self) -> list[pb_grpc.AgentServiceAsyncStub]:
        return [agent.stub for agent in self._app[AGENTS_KEY].in_turn()]

    async def owner(self, generation_id: str) -> pb_grpc.AgentServiceAsyncStub:
        return (await self._app[AGENTS_KEY].owner(generation_id)).stub


class ClientAdmission:
    """A tool call that runs a generation holds one of its client's generation slots, as
    a WebSocket generation does; one that captures a URL, a capture place, as
    `/api/screenshot` does (the same limiters: the limits count both)."""

    def __init__(self, generations: ClientLimiter, captures: CaptureLimiter) -> None:
        self._generations = generations
        self._captures = captures

    def admit(self, request: object | None) -> AbstractContextManager[None]:
        return _hold(self._generations, _client(request))

    def admit_capture(self, request: object | None) -> AbstractContextManager[None]:
        return _hold(self._captures, _client(request))


def _client(request: object | None) -> str:
    """The client address `_asgi` put in the request's scope."""
    scope = getattr(request, "scope", None)
    state = scope.get("state") if isinstance(scope, dict) else None
    client = state.get(CLIENT_STATE) if isinstance(state, dict) else None
    return client if isinstance(client, str) else "unknown"


@contextmanager
def _hold(limiter: ClientLimiter | CaptureLimiter, client: str) -> Iterator[None]:
    refusal = limiter.try_start(client)
    if refusal is not None:
        raise ToolError(refusal.message)
    try:
        yield
    finally:
        limiter.finish(client)


def add_mcp(app: web.Application) -> None:
    """Serves `/mcp` on `app` when the settings turn it on."""
    settings = app[SETTINGS_KEY]
    if not settings.mcp.enabled:
        return
    mcp_settings = McpSettings(
        agent_addr=settings.agent_addr, grpc_security=settings.grpc_security, read_files=False
    )
    token = settings.mcp.token or settings.access.token
    digest = token_digest(token) if token else None

    stop = asyncio.Event()
    running: list[asyncio.Task[None]] = []

    async def start(app: web.Application) -> None:
        admission = ClientAdmission(app[LIMITER_KEY], app[CAPTURES_KEY])
        server = build_server(mcp_settings, PoolRoute(app), admission)
        # The origin check is ours (below), by the gateway's allow-list; the SDK's would
        # also pin the Host header, which a deployment behind a name cannot meet.
        server.streamable_http_app(
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_request_body_size=settings.access.max_frame_bytes,
        )
        manager = app[MANAGER_KEY] = server.session_manager
        # The manager's task group must end in the task it began in; aiohttp may run an
        # app's startup and shutdown in different tasks, so it gets a task of its own.
        started = asyncio.Event()

        async def run() -> None:
            async with manager.run():
                started.set()
                await stop.wait()

        running.append(asyncio.create_task(run()))
        waiting = asyncio.ensure_future(started.wait())
        await asyncio.wait({running[0], waiting}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if running[0].done():
            running[0].result()  # raises what kept the manager from starting

    async def shutdown(app: web.Application) -> None:
        # On shutdown, before aiohttp waits for open requests: stopping the manager ends
        # every session, whose open SSE streams would otherwise hold the shutdown up.
        stop.set()
        if running:
            await running.pop()

    async def handle(request: web.Request) -> web.StreamResponse:
        if request.headers.get(hdrs.ORIGIN) is not None and not (
            settings.access.allowed_origins
            and origin_allowed(request.headers[hdrs.ORIGIN], settings.access)
        ):
            return web.json_response({"detail": ORIGIN_REFUSED}, status=403)
        if digest is not None and not any(
            bearer_matches(v, digest) for v in request.headers.getall(hdrs.AUTHORIZATION, [])
        ):
            return web.json_response(
                {"detail": TOKEN_REFUSED}, status=401, headers={hdrs.WWW_AUTHENTICATE: "Bearer"}
            )
        return await _asgi(request, app[MANAGER_KEY], client_identity(request, settings.access))

    app.on_startup.append(start)
    app.on_shutdown.append(shutdown)
    app.on_cleanup.append(shutdown)  # a failed startup skips the shutdown signal
    app.router.add_route("*", PATH, handle)


async def _asgi(
    request: web.Request, manager: StreamableHTTPSessionManager, client: str
) -> web.StreamResponse:
    """Runs one request through the SDK's ASGI handler, streaming the answer."""
    body = await request.read()
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.encode("latin-1"),
        "query_string": request.query_string.encode("latin-1"),
        "root_path": "",
        "headers": [(k.lower(), v) for k, v in request.raw_headers],
        "client": (request.remote or "", 0),
        "server": None,
        "state": {CLIENT_STATE: client},
    }
    response: web.StreamResponse | None = None
    body_sent = False
    done = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal body_sent
        if not body_sent:
            body_sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()  # the SDK listens for a disconnect: ours is the handler's end
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal response
        if message["type"] == "http.response.start":
            response = web.StreamResponse(status=message["status"])
            for name, value in message.get("headers", []):
                response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
            await response.prepare(request)
        elif message["type"] == "http.response.body" and response is not None:
            await response.write(message.get("body", b""))
            if not message.get("more_body", False):
                await response.write_eof()

    try:
        await manager.handle_request(scope, receive, send)
    finally:
        done.set()
    if response is None:
        return web.Response(status=500)
    return response
