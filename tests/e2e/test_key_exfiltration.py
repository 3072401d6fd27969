"""The server's keys cannot be sent to an address the client picks (issue 13, items 1 and 10).

The attack: a client names a base URL (its own listener) and no key, hoping the suite pairs
that URL with the key from its environment. Two loopback listeners record every request
that reaches them: `attacker` is the address a client names, `operator` is where the
suite's environment points every provider. The real processes run with recognisable keys
in their environment. Refused requests must get a precise error and leave `attacker`
untouched; accepted ones must send the request's key to the request's URL and the
environment's keys only to the environment's URL.

Item 10: a tool worker is sent only the credentials its tools use, never model keys.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from aiohttp import web
from google.protobuf import struct_pb2
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc
from s2c.common.v1 import common_pb2
from s2c.tools.v1 import tool_service_pb2 as tpb
from s2c.tools.v1 import tool_service_pb2_grpc as tpb_grpc

from services.agent.server import AgentServer
from services.agent.settings import AgentSettings
from services.common.errors import bad_request_violations
from services.tools.server import ToolsServer
from services.tools.settings import ToolsSettings
from tests.fakes import serve_on_loopback
from tests.processes import Processes, running_processes
from tests.suite import create_params, png_data_url, recording_tools, run_ws

ENV_KEYS = {
    "OPENAI_API_KEY": "sk-ENV-openai-exfil-5b2d4f607f3a9c1e",
    "ANTHROPIC_API_KEY": "sk-ant-ENV-anthropic-exfil-4a1c9e732b8e6d0f",
    "GEMINI_API_KEY": "AIza-ENV-gemini-exfil-9d2b80645c1f7a3e",
    "REPLICATE_API_TOKEN": "r8_ENV-replicate-exfil-0b8d1e579e4a2c6f",
}
REQUEST_OPENAI_KEY = "sk-REQUEST-openai-exfil-8a2c80463d7b1f9e"
REQUEST_REPLICATE_TOKEN = "r8_REQUEST-replicate-exfil-2f4b9d136c0a8e"
TIMEOUT_S = 60.0
SOURCES = ("openai", "anthropic", "gemini", "replicate")


def creds(source: str, key: str = "", url: str = "") -> common_pb2.Credentials:
    entry = common_pb2.ProviderCredentials(api_key=key, base_url=url)
    return common_pb2.Credentials(providers={source: entry})


@dataclass
class Listener:
    """A loopback HTTP server that records every request and answers 401 (no retries)."""

    url: str = ""
    requests: list[str] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.requests.append(
            f"{request.method} {request.path_qs}\n"
            + "\n".join(f"{k}: {v}" for k, v in request.headers.items())
            + "\n"
            + body.decode("utf-8", "replace")
        )
        error = {"error": {"message": "invalid key", "type": "invalid_request_error"}}
        return web.json_response(error, status=401)

    def saw(self, secret: str) -> bool:
        return any(secret in text for text in self.requests)


@pytest.fixture
async def listeners() -> AsyncIterator[tuple[Listener, Listener]]:
    pair = (Listener(), Listener())
    runners = []
    for listener in pair:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", listener.handle)
        runner, listener.url = await serve_on_loopback(app)
        runners.append(runner)
    yield pair
    for runner in runners:
        await runner.cleanup()


@pytest.fixture
async def suite(tmp_path: Path, listeners: tuple[Listener, Listener]) -> AsyncIterator[Processes]:
    _, operator = listeners
    env = {
        **ENV_KEYS,
        "OPENAI_BASE_URL": f"{operator.url}/v1",
        "ANTHROPIC_BASE_URL": operator.url,
        "GEMINI_BASE_URL": operator.url,
        "REPLICATE_BASE_URL": operator.url,
        "S2C_SCREENSHOTS": "0",
    }
    async with running_processes(tmp_path, env) as processes:
        yield processes


def tool_request(
    name: str, arguments: dict[str, Any], credentials: common_pb2.Credentials | None = None
) -> tpb.ExecuteToolRequest:
    args = struct_pb2.Struct()
    args.update(arguments)
    credentials = credentials or common_pb2.Credentials()
    return tpb.ExecuteToolRequest(
        call=tpb.ToolCall(id=f"{name}-{sorted(credentials.providers)}", name=name, arguments=args),
        context=tpb.ToolContext(
            input_images=[png_data_url()],
            credentials=credentials,
            flags=tpb.ToolFlags(
                image_generation_enabled=True, asset_extraction_enabled=True, has_input_images=True
            ),
            asset_base_url="http://127.0.0.1:7001",
        ),
    )


async def test_client_base_url_never_gets_the_server_key(
    suite: Processes, listeners: tuple[Listener, Listener]
) -> None:
    attacker, operator = listeners

    # 1. The browser attack: a base URL and no key.
    refused = await run_ws(suite.ws_url, create_params(openAiBaseURL=f"{attacker.url}/v1"))
    assert refused.close_code == 4332
    assert refused.of("error")[-1]["value"] == (
        "openAiBaseURL needs openAiApiKey in the same request"
    )
    assert refused.of("variantCount") == []

    # 2. Direct gRPC callers, one base URL field at a time, on every RPC taking credentials.
    async with grpc.aio.insecure_channel(f"127.0.0.1:{suite.agent.port}") as channel:
        stub = pb_grpc.AgentServiceStub(channel)
        for name in SOURCES:
            credentials = creds(name, url=attacker.url)
            for method in ("GenerateCode", "ListModels", "GetCapabilities"):
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await agent_call(stub, method, credentials)
                assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, method
                [violation] = bad_request_violations(caught.value)
                assert violation.field == f"credentials.providers[{name}].base_url", method
                assert "in the same request" in violation.description

    # 3. The tool worker, called directly: Replicate and Gemini URLs without their keys.
    async with grpc.aio.insecure_channel(f"127.0.0.1:{suite.tools.port}") as channel:
        tools = tpb_grpc.ToolServiceStub(channel)
        for tool, arguments, name in (
            ("generate_images", {"prompts": ["a lighthouse"]}, "replicate"),
            ("extract_assets", {"asset_descriptions": ["the logo"]}, "gemini"),
        ):
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await tools.ExecuteTool(
                    tool_request(tool, arguments, creds(name, url=attacker.url)), timeout=TIMEOUT_S
                )
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            [violation] = bad_request_violations(caught.value)
            assert violation.field == f"context.credentials.providers[{name}].base_url"
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await tools.ListTools(
                    tpb.ListToolsRequest(credentials=creds(name, url=attacker.url)),
                    timeout=TIMEOUT_S,
                )
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT

        # Every refusal above was answered before any provider call: nothing arrived.
        assert attacker.requests == []

        # 4. Accepted: the request's own key with the request's own URL goes there...
        await tools.ExecuteTool(
            tool_request(
                "generate_images",
                {"prompts": ["a lighthouse"]},
                creds("replicate", REQUEST_REPLICATE_TOKEN, attacker.url),
            ),
            timeout=TIMEOUT_S,
        )
        # ...and without request credentials the worker's key goes to its own URL only.
        await tools.ExecuteTool(
            tool_request("generate_images", {"prompts": ["a harbour"]}), timeout=TIMEOUT_S
        )
    assert attacker.saw(REQUEST_REPLICATE_TOKEN)
    assert operator.saw(ENV_KEYS["REPLICATE_API_TOKEN"])

    accepted = await run_ws(
        suite.ws_url,
        create_params(openAiApiKey=REQUEST_OPENAI_KEY, openAiBaseURL=f"{attacker.url}/v1"),
    )
    assert accepted.of("variantCount"), json.dumps(accepted.frames)[:500]
    assert attacker.saw(f"Bearer {REQUEST_OPENAI_KEY}")
    # A browser generation without keys: the environment's keys, at the environment's URL.
    await run_ws(suite.ws_url, create_params())
    assert operator.saw(f"Bearer {ENV_KEYS['OPENAI_API_KEY']}")
    assert operator.saw(ENV_KEYS["ANTHROPIC_API_KEY"])
    assert operator.saw(ENV_KEYS["GEMINI_API_KEY"])

    # The point of it all: no environment key ever reached the client's address, and the
    # request's key went nowhere but the request's address.
    for key in ENV_KEYS.values():
        assert not attacker.saw(key), key
    assert not operator.saw(REQUEST_OPENAI_KEY)
    assert not operator.saw(REQUEST_REPLICATE_TOKEN)


async def test_switch_refuses_request_base_urls(
    tmp_path: Path, listeners: tuple[Listener, Listener]
) -> None:
    attacker, _ = listeners
    env = {**ENV_KEYS, "S2C_ALLOW_REQUEST_BASE_URLS": "0", "S2C_SCREENSHOTS": "0"}
    async with running_processes(tmp_path, env) as processes:
        # Even with the request's own key, the URL is refused, and the browser is told why.
        result = await run_ws(
            processes.ws_url,
            create_params(openAiApiKey=REQUEST_OPENAI_KEY, openAiBaseURL=f"{attacker.url}/v1"),
        )
        assert result.close_code == 4332
        error = result.of("error")[-1]["value"]
        assert "credentials.providers[openai].base_url" in error
        assert "S2C_ALLOW_REQUEST_BASE_URLS" in error
        async with grpc.aio.insecure_channel(f"127.0.0.1:{processes.tools.port}") as channel:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await tpb_grpc.ToolServiceStub(channel).ExecuteTool(
                    tool_request(
                        "generate_images",
                        {"prompts": ["x"]},
                        creds("replicate", REQUEST_REPLICATE_TOKEN, attacker.url),
                    ),
                    timeout=TIMEOUT_S,
                )
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert attacker.requests == []


async def agent_call(
    stub: pb_grpc.AgentServiceAsyncStub, method: str, credentials: common_pb2.Credentials
) -> None:
    if method == "GenerateCode":
        request = pb.GenerateCodeRequest(
            input_mode=pb.INPUT_MODE_TEXT, prompt=pb.Prompt(text="a page"), credentials=credentials
        )
        async for _ in stub.GenerateCode(request, timeout=TIMEOUT_S):
            pass
    elif method == "ListModels":
        await stub.ListModels(pb.ListModelsRequest(credentials=credentials), timeout=TIMEOUT_S)
    else:
        await stub.GetCapabilities(
            pb.GetCapabilitiesRequest(credentials=credentials), timeout=TIMEOUT_S
        )


async def test_tool_workers_never_receive_model_keys(tmp_path: Path) -> None:
    tools = ToolsServer(
        ToolsSettings(listen="127.0.0.1:0", data_dir=tmp_path, screenshots_enabled=False)
    )
    await tools.start()
    try:
        async with recording_tools(tools.port) as (recorder, port):
            agent = AgentServer(
                AgentSettings(
                    listen="127.0.0.1:0",
                    tools_addr=f"127.0.0.1:{port}",
                    data_dir=tmp_path,
                    demo_pace_s=0.0,
                    pinned_models=("demo",),
                )
            )
            await agent.start()
            credentials = common_pb2.Credentials(
                providers={
                    "openai": common_pb2.ProviderCredentials(
                        api_key=REQUEST_OPENAI_KEY, base_url="http://127.0.0.1:9/v1"
                    ),
                    "anthropic": common_pb2.ProviderCredentials(
                        api_key="sk-ant-REQUEST-model-key", base_url="http://127.0.0.1:9"
                    ),
                    "gemini": common_pb2.ProviderCredentials(api_key="AIza-REQUEST-tool-key"),
                    "replicate": common_pb2.ProviderCredentials(api_key=REQUEST_REPLICATE_TOKEN),
                }
            )
            try:
                async with grpc.aio.insecure_channel(f"127.0.0.1:{agent.port}") as agent_channel:
                    stub = pb_grpc.AgentServiceStub(agent_channel)
                    request = pb.GenerateCodeRequest(
                        input_mode=pb.INPUT_MODE_TEXT,
                        prompt=pb.Prompt(text="a pricing page"),
                        variant_count=1,
                        credentials=credentials,
                    )
                    call = stub.GenerateCode(request, timeout=TIMEOUT_S)
                    events = [e async for message in call for e in message.events]
                    await stub.GetCapabilities(
                        pb.GetCapabilitiesRequest(credentials=credentials), timeout=TIMEOUT_S
                    )
            finally:
                await agent.stop(grace_s=0.0)
    finally:
        await tools.stop()
    assert any(e.HasField("variant_complete") for e in events)
    methods = [method for method, _ in recorder.seen]
    assert "ListTools" in methods
    assert any(m.startswith("ExecuteTool") for m in methods)
    for method, seen in recorder.seen:
        # No entry at all for a model provider; what the tools do use still arrives.
        assert set(seen.providers) == {"gemini", "replicate"}, method
        assert seen.providers["gemini"].api_key == "AIza-REQUEST-tool-key", method
        assert seen.providers["replicate"].api_key == REQUEST_REPLICATE_TOKEN, method
