"""The MCP server with the SDK's own client, over stdio (`s2c mcp`) and Streamable HTTP
(the gateway's `/mcp`), against one in-process suite running the demo model."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import grpc
import httpx2
import pytest
import pytest_asyncio
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, EmbeddedResource, TextContent
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.agent.settings import AgentSettings
from services.gateway.access import AccessSettings
from services.gateway.mcp_access import McpAccess
from services.gateway.settings import GatewaySettings
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
    agent = AgentSettings(demo_pace_s=0.01)
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
async def test_every_tool_is_listed_and_called(suite: Suite, transport: Callable[[Suite], Connect]) -> None:
    async with transport(suite)() as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        assert "screenshots" in tools["generate_page"].input_schema["properties"]
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == [
            "s2c://generations/{generation_id}/{option}/{path}"
        ]

        progress: list[str] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(message or "")

        shot = {"data": png_data_url().partition(",")[2], "mimeType": "image/png", "width": 1280}
        created = await client.call_tool(
            "generate_page",
            {"screenshots": [shot], "prompt": "a pricing page", "options": 1, "models": ["demo"]},
            progress_callback=on_progress,
        )
        facts = summary(created)
        assert not created.is_error, created.content
        assert facts["status"] == "completed"
        [option] = facts["options"]
        assert option["model"] == "demo" and option["usage"]["priced"] is False
        assert [f["path"] for f in option["files"]] == ["index.html"]
        embedded = [c for c in created.content if isinstance(c, EmbeddedResource)]
        assert "<html" in embedded[0].resource.text.lower()  # type: ignore[union-attr]
        assert len(progress) >= 3, progress
        assert any("create_file" in p for p in progress)

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

        # No browser in this suite: the capture is refused by the tool workers, as a
        # tool error that says so (tests/e2e cover real captures).
        captured = await client.call_tool("capture_url", {"url": "https://example.test/"})
        assert "url: the capture failed" in error_text(captured)


@on_suite
@TRANSPORTS
async def test_bad_arguments_are_tool_errors_naming_the_field(
    suite: Suite, transport: Callable[[Suite], Connect]
) -> None:
    async with transport(suite)() as client:
        cases = {
            "options": {"prompt": "x", "options": -1},
            "stack": {"prompt": "x", "stack": "cobol"},
            "screenshots[0]": {"screenshots": [{"page": "index"}]},
            "screenshots[0].data": {"screenshots": [{"data": "not base64!", "mimeType": "x"}]},
            "prompt": {},
        }
        for field, arguments in cases.items():
            result = await client.call_tool("generate_page", arguments)
            assert field in error_text(result), (field, result.content)
        missing = await client.call_tool("get_generation", {"generation_id": "nope"})
        assert "generation_id" in error_text(missing)
        # The session survives every refusal.
        assert len((await client.list_tools()).tools) == len(TOOLS)


@on_suite
@TRANSPORTS
async def test_cancelling_the_call_cancels_the_generation(
    suite: Suite, transport: Callable[[Suite], Connect]
) -> None:
    ids: list[str] = []
    running = anyio.Event()

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        text = message or ""
        if text.startswith("generation ") and ":" in text and not ids:
            ids.append(text.removeprefix("generation ").partition(":")[0])
        if "create_file started" in text:
            running.set()

    async with transport(suite)() as client, anyio.create_task_group() as group:

        async def call() -> None:
            await client.call_tool(
                "generate_page",
                {"prompt": "a long page", "options": 1, "models": ["demo"]},
                progress_callback=on_progress,
            )

        group.start_soon(call)
        await running.wait()
        group.cancel_scope.cancel()
    assert await watch_to_end(suite, ids[0]) == pb.RUN_STATUS_CANCELLED
