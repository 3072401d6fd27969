"""Test harness: the three services in-process on port 0, and a browser-like WS client."""

from __future__ import annotations

import asyncio
import base64
import io
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import aiohttp
import grpc
from aiohttp import web
from PIL import Image
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc
from s2c.tools.v1 import tool_service_pb2_grpc as tpb_grpc

from services.agent.server import AgentServer
from services.agent.settings import AgentSettings
from services.common.credentials import Credentials, Endpoint
from services.gateway.access import AccessSettings
from services.gateway.app import create_app
from services.gateway.settings import GatewaySettings
from services.tools.server import ToolsServer
from services.tools.settings import ToolsSettings
from tests.fakes.recording_worker import RecordingToolService


def png_data_url(width: int = 64, height: int = 48, color: str = "#3366cc") -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def create_params(**overrides: Any) -> dict[str, Any]:
    """The params frame the upstream frontend sends for a create-from-image request."""
    params: dict[str, Any] = {
        "generationType": "create",
        "inputMode": "image",
        "prompt": {"text": "", "images": [png_data_url()], "videos": []},
        "generatedCodeConfig": "html_tailwind",
        "codeGenerationModel": "claude-opus-4-8",
        "isImageGenerationEnabled": True,
        "isAssetExtractionEnabled": True,
        "openAiApiKey": None,
        "anthropicApiKey": None,
        "geminiApiKey": None,
        "replicateApiKey": None,
        "openAiBaseURL": None,
        "screenshotOneApiKey": None,
        "editorTheme": "cobalt",
        "isTermOfServiceAccepted": True,
        "designSystem": None,
    }
    params.update(overrides)
    return params


def update_params(old: str, **overrides: Any) -> dict[str, Any]:
    """The params frame for "Make it new" on a page whose current code is `old`."""
    return create_params(
        generationType="update",
        prompt={"text": "Make it new", "images": [], "videos": []},
        history=[
            {"role": "user", "text": "A page", "images": [], "videos": []},
            {"role": "assistant", "text": old, "images": [], "videos": []},
            {"role": "user", "text": "Make it new", "images": [], "videos": []},
        ],
        fileState={"path": "index.html", "content": old},
        **overrides,
    )


def fake_providers(**base_urls: str) -> AgentSettings:
    """The agent reaching each named provider only at its fake's URL, with no retries (a
    scripted failure shows at once) and the demo model unpaced."""
    return AgentSettings(
        demo_pace_s=0.0,
        provider_max_retries=0,
        credentials=Credentials.of(
            **{name: Endpoint(base_url=url) for name, url in base_urls.items()}
        ),
    )


def local_model(base_url: str, **overrides: Any) -> AgentSettings:
    """The agent running every option on one OpenAI-compatible model, `local:tiny`, served
    by a fake at `base_url`: no retries (a scripted failure shows at once), the demo
    unpaced and no preview replayed; `overrides` set any other field."""
    settings = AgentSettings(
        demo_pace_s=0.0,
        provider_max_retries=0,
        pinned_models=("local:tiny",),
        local_models=("tiny",),
        local_base_url=base_url,
        preview_replay_s=0.0,
    )
    return replace(settings, **overrides)


@dataclass
class WsResult:
    frames: list[dict[str, Any]] = field(default_factory=list)
    close_code: int | None = None

    def of(self, kind: str, variant: int | None = None) -> list[dict[str, Any]]:
        return [
            f
            for f in self.frames
            if f["type"] == kind and (variant is None or f.get("variantIndex") == variant)
        ]

    def variant_frames(self, variant: int) -> list[dict[str, Any]]:
        return [f for f in self.frames if f.get("variantIndex") == variant]

    def last_code(self, variant: int) -> str:
        codes = self.of("setCode", variant)
        return str(codes[-1]["value"]) if codes else ""


async def close_once_coding(url: str, code: int) -> int | None:
    """Starts a create like the upstream UI, closes the socket with `code` at the first
    `setCode` (the generation is surely running then) and returns the echoed close code."""
    async with aiohttp.ClientSession() as session, session.ws_connect(url) as ws:
        await ws.send_str(json.dumps(create_params()))
        async for message in ws:
            if json.loads(message.data)["type"] == "setCode":
                break
        await ws.close(code=code)
        return ws.close_code


@asynccontextmanager
async def recording_tools(tools_port: int) -> AsyncIterator[tuple[RecordingToolService, int]]:
    """A recorder in front of the tool worker on `tools_port`, and the port it serves on."""
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{tools_port}")
    recorder = RecordingToolService(tpb_grpc.ToolServiceStub(channel))
    server = grpc.aio.server()
    tpb_grpc.add_ToolServiceServicer_to_server(recorder, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield recorder, port
    finally:
        await server.stop(None)
        await channel.close()


async def run_ws(url: str, params: Any, *, raw: str | None = None) -> WsResult:
    """Sends one params frame like the upstream UI and collects frames until the close."""
    async with aiohttp.ClientSession() as session, session.ws_connect(url, max_msg_size=0) as ws:
        await ws.send_str(raw if raw is not None else json.dumps(params))
        return await until_closed(ws)


async def until_closed(ws: aiohttp.ClientWebSocketResponse) -> WsResult:
    """Every text frame `ws` receives until it closes, and its close code."""
    result = WsResult()
    async for message in ws:
        if message.type == aiohttp.WSMsgType.TEXT:
            result.frames.append(json.loads(message.data))
    result.close_code = ws.close_code
    return result


@dataclass
class Suite:
    tools: ToolsServer
    agent: AgentServer
    gateway_port: int
    gateway: web.Application | None = None  # the gateway's app, for what tests drive in it

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.gateway_port}/generate-code"

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.gateway_port}"


@asynccontextmanager
async def running_suite(
    data_dir: Path,
    *,
    agent: AgentSettings | None = None,
    tools: ToolsSettings | None = None,
    gateway: GatewaySettings | None = None,
) -> AsyncIterator[Suite]:
    """Tools, agent and gateway on free ports, wired together; settings never read the env."""
    tools_settings = replace(
        tools or ToolsSettings(screenshots_enabled=False), listen="127.0.0.1:0", data_dir=data_dir
    )
    tools_server = ToolsServer(tools_settings)
    await tools_server.start()
    agent_settings = replace(
        agent or AgentSettings(demo_pace_s=0.0),
        listen="127.0.0.1:0",
        tools_addr=f"127.0.0.1:{tools_server.port}",
        data_dir=data_dir,
    )
    agent_server = AgentServer(agent_settings)
    await agent_server.start()
    gateway_settings = replace(
        gateway
        or GatewaySettings(
            access=AccessSettings(
                max_concurrent_per_client=0, starts_per_minute=0, max_waiting_per_client=0
            )
        ),
        port=0,
        agent_addr=f"127.0.0.1:{agent_server.port}",
        data_dir=data_dir,
    )
    app = create_app(gateway_settings)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield Suite(tools_server, agent_server, runner.addresses[0][1], app)
    finally:
        await runner.cleanup()
        await agent_server.stop(grace_s=0.0)
        await tools_server.stop()


@dataclass
class Socket:
    """One browser socket, read in the background; tests wait on its frames."""

    session: aiohttp.ClientSession
    ws: aiohttp.ClientWebSocketResponse
    frames: list[dict[str, Any]] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    reader: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, url: str, first: dict[str, Any]) -> Socket:
        session = aiohttp.ClientSession()
        ws = await session.ws_connect(url, max_msg_size=0)
        socket = cls(session, ws)
        socket.reader = asyncio.create_task(socket._read())
        await ws.send_str(json.dumps(first))
        return socket

    async def _read(self) -> None:
        async for message in self.ws:
            if message.type == aiohttp.WSMsgType.TEXT:
                self.frames.append(json.loads(message.data))
                self.arrived.set()
        self.arrived.set()

    async def frame(self, kind: str) -> dict[str, Any]:
        """The first frame of `kind`, waiting for it."""
        while True:
            for f in self.frames:
                if f["type"] == kind:
                    return f
            assert not self.ws.closed, f"closed ({self.ws.close_code}) without a {kind} frame"
            self.arrived.clear()
            await self.arrived.wait()

    async def generation_id(self) -> str:
        return str((await self.frame("generation"))["value"])

    async def close(self, code: int) -> None:
        await self.ws.close(code=code)
        await self.end()

    async def end(self) -> int | None:
        """Waits for the close; its code."""
        assert self.reader is not None
        await self.reader
        await self.session.close()
        return self.ws.close_code

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.frames if f["type"] == kind]


async def generation_events(port: int, request: pb.GenerateCodeRequest) -> list[pb.GenerationEvent]:
    """Every event of one GenerateCode call to the agent on `port`, in order."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = pb_grpc.AgentServiceStub(channel)
        return [e async for message in stub.GenerateCode(request) for e in message.events]


async def generation_refusal(port: int, request: pb.GenerateCodeRequest) -> grpc.aio.AioRpcError:
    """The error GenerateCode answers `request` with; fails the test when it answers none."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = pb_grpc.AgentServiceStub(channel)
        try:
            async for _ in stub.GenerateCode(request):
                pass
        except grpc.aio.AioRpcError as exc:
            return exc
    raise AssertionError("GenerateCode streamed to its end: no error")
