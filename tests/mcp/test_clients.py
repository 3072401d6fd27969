"""The MCP server with the SDK's own client, over stdio (`s2c mcp`) and Streamable HTTP
(the gateway's `/mcp`), against one in-process suite running the demo model."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import socket
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import grpc
import httpx2
import pytest
import pytest_asyncio
from aiohttp import web
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, EmbeddedResource, TextContent
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.agent.settings import AgentSettings
from services.common.security import GrpcSecurity
from services.gateway.access import AccessSettings
from services.gateway.app import create_app
from services.gateway.mcp_access import McpAccess
from services.gateway.settings import GatewaySettings
from services.mcp.agents import SingleAgent
from services.mcp.run import run_generation
from tests.suite import Suite, png_data_url, running_suite

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "mcp-test-token-0123456789"
TOOLS = {"generate_page", "update_page", "capture_url", "list_models", "get_generation"}
on_suite = pytest.mark.asyncio(loop_scope="module")
Connect = Callable[[], AbstractAsyncContextManager[Client]]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def suite(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Suite]:
    # Paced, so a generation is still running when the cancellation test cancels it.
    gateway = GatewaySettings(
        access=AccessSettings(max_concurrent_per_client=0, starts_per_minute=0),
        mcp=McpAccess(token=TOKEN),
    )
    agent = AgentSettings(demo_pace_s=0.005)
    async with running_suite(tmp_path_factory.mktemp("mcp"), agent=agent, gateway=gateway) as s:
        yield s


def http(suite: Suite) -> Connect:
    def connect() -> AbstractAsyncContextManager[Client]:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        transport = streamable_http_client(
            f"{suite.http_url}/mcp", http_client=httpx2.AsyncClient(headers=headers)
        )
        return Client(transport, mode="legacy")

    return connect


def stdio(suite: Suite) -> Connect:
    def connect() -> AbstractAsyncContextManager[Client]:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "services.cli", "mcp", "--agent", f"127.0.0.1:{suite.agent.port}"],
            cwd=str(ROOT),
            env={"S2C_LOG_FORMAT": "json", "PYTHONPATH": str(ROOT / "gen" / "python")},
        )
        return Client(stdio_client(params), mode="legacy")

    return connect


TRANSPORTS = pytest.mark.parametrize("transport", [http, stdio], ids=["http", "stdio"])


def summary(result: CallToolResult) -> dict[str, Any]:
    assert isinstance(result.structured_content, dict), result.content
    return result.structured_content


def error_text(result: CallToolResult) -> str:
    assert result.is_error, result.content
    return " ".join(c.text for c in result.content if isinstance(c, TextContent))


async def watch_to_end(suite: Suite, generation_id: str) -> int:
    """The generation's ending status, waiting for it on the agent's own stream."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{suite.agent.port}") as channel:
        stub = pb_grpc.AgentServiceStub(channel)
        watch = stub.WatchGeneration(pb.WatchGenerationRequest(generation_id=generation_id))
        async for message in watch:
            for event in message.events:
                if event.WhichOneof("payload") == "generation_complete":
                    record = await stub.GetGeneration(
                        pb.GetGenerationRequest(generation_id=generation_id)
                    )
                    return record.generation.status
    raise AssertionError("the watch ended without generation_complete")


@on_suite
@TRANSPORTS
async def test_the_python_sdk_client_calls_every_tool(
    suite: Suite, transport: Callable[[Suite], Connect], tmp_path: Path
) -> None:
    # One session per transport (a stdio server is a process start): every tool, the
    # refusals, then a cancellation; the session outlives each.
    png = tmp_path / "shot.png"
    png.write_bytes(base64.b64decode(png_data_url().partition(",")[2]))
    # A screenshot as an MCP image content carries it; over stdio, as a local file.
    image = {"data": png_data_url().partition(",")[2], "mimeType": "image/png"}
    shot = {**(image if transport is http else {"image": str(png)}), "width": 1280}
    async with transport(suite)() as client:
        await calls_every_tool(client, shot)
        await refuses_bad_arguments(client)
        if transport is http:  # a path would read the gateway's disk
            refused = await client.call_tool(
                "generate_page", {"screenshots": [{"image": str(png)}]}
            )
            assert "screenshots[0].image: file paths are read only" in error_text(refused)
        generation_id = await cancels_mid_run(client)
        assert len((await client.list_tools()).tools) == len(TOOLS)
    assert await watch_to_end(suite, generation_id) == pb.RUN_STATUS_CANCELLED


async def calls_every_tool(client: Client, shot: dict[str, Any]) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    assert "screenshots" in tools["generate_page"].input_schema["properties"]
    templates = (await client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == [
        "s2c://generations/{generation_id}/{option}/{path}"
    ]

    steps: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        steps.append(message or "")

    created = await client.call_tool(
        "generate_page",
        {"screenshots": [shot], "prompt": "a pricing page", "options": 1, "models": ["demo"]},
        progress_callback=on_progress,
    )
    facts = summary(created)
    assert not created.is_error, created.content
    assert facts["status"] == "completed"
    [option] = facts["options"]
    assert option["model"] == "demo"
    assert option["usage"]["priced"] is False
    assert [f["path"] for f in option["files"]] == ["index.html"]
    embedded = [c for c in created.content if isinstance(c, EmbeddedResource)]
    assert "<html" in embedded[0].resource.text.lower()  # type: ignore[union-attr]
    assert len(steps) >= 3, steps
    assert any("create_file" in step for step in steps)

    uri = option["files"][0]["uri"]
    read = await client.read_resource(uri)
    assert read.contents[0].text == embedded[0].resource.text  # type: ignore[union-attr]

    generation_id = facts["generation_id"]
    record = summary(await client.call_tool("get_generation", {"generation_id": generation_id}))
    assert record["options"][0]["files"] == option["files"]

    updated = await client.call_tool(
        "update_page",
        {"generation_id": generation_id, "option": 0, "instruction": "Make the title red"},
    )
    assert summary(updated)["status"] == "completed", updated.content
    assert summary(updated)["generation_id"] != generation_id

    models = summary(await client.call_tool("list_models", {}))["models"]
    assert any(m["id"] == "demo" and m["available"] for m in models)

    # No browser in this suite (a launch would take most of the module's time): the
    # tool workers refuse the capture, and the refusal comes back as a tool error.
    captured = await client.call_tool("capture_url", {"url": "https://example.test/"})
    assert "url: the capture failed" in error_text(captured)


async def refuses_bad_arguments(client: Client) -> None:
    cases: dict[str, dict[str, Any]] = {
        "options": {"prompt": "x", "options": -1},
        "stack": {"prompt": "x", "stack": "cobol"},
        "screenshots[0]": {"screenshots": [{"page": "index"}]},
        "screenshots[0].data": {"screenshots": [{"data": "not base64!", "mimeType": "x"}]},
        "prompt": {},
        "models[0]": {"prompt": "x", "models": ["no-such-model"]},  # the agent's refusal
    }
    for field, arguments in cases.items():
        result = await client.call_tool("generate_page", arguments)
        assert field in error_text(result), (field, result.content)
    missing = await client.call_tool("get_generation", {"generation_id": "nope"})
    assert "generation_id" in error_text(missing)
    # The session survives every refusal.
    assert len((await client.list_tools()).tools) == len(TOOLS)


async def cancels_mid_run(client: Client) -> str:
    """Cancels a generate_page once it runs (its first progress names the generation);
    the generation's id."""
    ids: list[str] = []
    running = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        text = message or ""
        if text.startswith("generation ") and not ids:
            ids.append(text.removeprefix("generation ").partition(":")[0])
            running.set()

    async with anyio.create_task_group() as group:

        async def call() -> None:
            await client.call_tool(
                "generate_page",
                {"prompt": "a long page", "options": 1, "models": ["demo"]},
                progress_callback=on_progress,
            )

        group.start_soon(call)
        await running.wait()
        group.cancel_scope.cancel()
    return ids[0]


@on_suite
@pytest.mark.parametrize("kind", ["http", "stdio"])
async def test_the_typescript_sdk_client_calls_every_tool(suite: Suite, kind: str) -> None:
    node = shutil.which("node")
    assert node is not None, "node is needed (make install)"
    if kind == "http":
        args = [f"{suite.http_url}/mcp", TOKEN]
    else:
        args = [sys.executable, f"127.0.0.1:{suite.agent.port}", str(ROOT)]
    process = await asyncio.create_subprocess_exec(
        node,
        str(ROOT / "tests" / "mcp" / "ts_client.mjs"),
        kind,
        *args,
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()[-3000:]
    seen = json.loads(out.decode().strip().splitlines()[-1])
    assert seen["tools"] == sorted(TOOLS)
    assert seen["createdError"] is False
    assert seen["created"]["status"] == "completed"
    assert len(seen["progress"]) >= 3
    assert seen["resourceBytes"] == seen["fileBytes"] > 0
    assert seen["updated"] == "completed"
    assert seen["record"] == "completed"
    assert "demo" in seen["models"]
    assert seen["capture"]["isError"]
    assert "url: the capture failed" in seen["capture"]["text"]
    assert seen["bad"]["isError"]
    assert "options" in seen["bad"]["text"]


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


async def post_initialize(url: str, headers: dict[str, str]) -> tuple[int, dict[str, str], str]:
    async with aiohttp.ClientSession() as session:
        async with session.post(url, json=INITIALIZE, headers={**ACCEPT, **headers}) as r:
            return r.status, dict(r.headers), await r.text()


@on_suite
async def test_http_refuses_a_missing_token_and_a_foreign_origin(suite: Suite) -> None:
    url = f"{suite.http_url}/mcp"
    for headers in ({}, {"Authorization": "Bearer wrong-token-123456"}):
        status, answer_headers, text = await post_initialize(url, headers)
        assert status == 401
        assert answer_headers["WWW-Authenticate"] == "Bearer"
        assert TOKEN not in text
    good = {"Authorization": f"Bearer {TOKEN}"}
    assert (await post_initialize(url, {**good, "Origin": "http://evil.example"}))[0] == 403
    assert (await post_initialize(url, good))[0] == 200


@asynccontextmanager
async def gateway_alone(settings: GatewaySettings, data_dir: Path) -> AsyncIterator[str]:
    """A gateway with no agent behind it (refusals never reach one): its /mcp URL."""
    runner = web.AppRunner(create_app(replace(settings, data_dir=data_dir)))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/mcp"
    finally:
        await runner.cleanup()


@on_suite
async def test_mcp_takes_the_gateway_token_without_its_own_and_can_be_off(
    tmp_path: Path,
) -> None:
    gateway_token = "gateway-token-0123456789"
    settings = GatewaySettings(access=AccessSettings(token=gateway_token))
    async with gateway_alone(settings, tmp_path) as url:
        assert (await post_initialize(url, {}))[0] == 401
        bearer = {"Authorization": f"Bearer {gateway_token}"}
        assert (await post_initialize(url, bearer))[0] == 200
    async with gateway_alone(GatewaySettings(mcp=McpAccess(enabled=False)), tmp_path) as url:
        assert (await post_initialize(url, {}))[0] == 404


@on_suite
async def test_a_generation_passes_over_an_agent_that_does_not_take_it(suite: Suite) -> None:
    with socket.socket() as probe:  # a port nothing listens on: that agent is unavailable
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    down, up = (
        SingleAgent(f"127.0.0.1:{dead}", GrpcSecurity()),
        SingleAgent(f"127.0.0.1:{suite.agent.port}", GrpcSecurity()),
    )
    steps: list[str] = []

    async def report(message: str) -> None:
        steps.append(message)

    request = pb.GenerateCodeRequest(
        input_mode=pb.INPUT_MODE_TEXT, prompt=pb.Prompt(text="a page"), models=["demo"]
    )
    request.variant_count = 1
    try:
        finished = await run_generation([*down.in_turn(), *up.in_turn()], request, report)
    finally:
        await down.close()
        await up.close()
    assert steps[0] == f"generation {finished.generation_id}: 1 option(s) on demo"
    assert await watch_to_end(suite, finished.generation_id) == pb.RUN_STATUS_COMPLETED
