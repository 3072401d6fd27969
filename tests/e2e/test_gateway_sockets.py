"""The gateway's /generate-code socket attacked from outside, against real processes.

Gateway, agent and a tool worker run as `s2c` processes (a fake OpenAI server or a fake
agent runs in the test). Every socket must end with its result or an `error` frame and
4332, never a bare close.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest
import pytest_asyncio
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.common.errors import bad_request_violations
from tests.fakes.openai_server import FakeOpenAI, Text, responses_turn
from tests.processes import Processes, running_processes
from tests.suite import WsResult, create_params, run_ws, until_closed

BURST = 120
VARIANTS = 4
PAGE = "<!DOCTYPE html><html><body>" + "<p>burst page</p>" * 480 + "</body></html>"
TEXT_CREATE = create_params(inputMode="text", prompt={"text": "a page", "images": [], "videos": []})


# One module loop, so that the processes with short timeouts are started once.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def short_timeouts(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Processes]:
    """Shared: every test on it is refused before a generation starts, so none leaves
    anything running for the next (the params tests check the agent started none)."""
    env = {"S2C_PARAMS_TIMEOUT_S": "1", "S2C_HTTP_IDLE_TIMEOUT_S": "1"}
    async with running_processes(tmp_path_factory.mktemp("short-timeouts"), env) as suite:
        yield suite


def _refused(result: WsResult, needle: str) -> None:
    assert result.close_code == 4332
    assert [f["type"] for f in result.frames] == ["error"]
    assert needle in result.frames[0]["value"]


async def test_idle_sockets_hold_no_generation_slot(tmp_path: Path) -> None:
    env = {"S2C_MAX_CONCURRENT_PER_CLIENT": "1", "S2C_MAX_WAITING_PER_CLIENT": "4"}
    async with running_processes(tmp_path, env) as suite, aiohttp.ClientSession() as session:
        idle = [await session.ws_connect(suite.ws_url) for _ in range(3)]
        # Three sockets that never send params; the one slot is still free.
        done = await run_ws(suite.ws_url, TEXT_CREATE)
        idle.append(await session.ws_connect(suite.ws_url))
        # A fifth waiting socket takes the place of the oldest (issue 24, item 7).
        fifth = await session.ws_connect(suite.ws_url)
        evicted = await until_closed(idle[0])
        for ws in [*idle[1:], fifth]:
            await ws.close()
    assert done.close_code == 1000
    assert len(done.of("variantComplete")) == 2
    _refused(evicted, "Closed to make room: more than 4 connections from this client")


async def test_a_socket_without_params_is_told_and_closed(short_timeouts: Processes) -> None:
    async with aiohttp.ClientSession() as session, session.ws_connect(short_timeouts.ws_url) as ws:
        result = await until_closed(ws)
    _refused(result, "No params received within 1 s")


async def test_half_sent_headers_are_closed_by_the_server(short_timeouts: Processes) -> None:
    port = short_timeouts.gateway.port

    async def half_header() -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        await writer.drain()
        rest = await reader.read()  # b"" once the server closes the connection
        writer.close()
        return rest

    assert await asyncio.gather(*(half_header() for _ in range(50))) == [b""] * 50
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://127.0.0.1:{port}/healthz") as response:
            assert response.status == 200


@pytest.mark.parametrize(
    ("raw", "kind"),
    [("null", "null"), ("3", "a number"), ("[1, 2]", "a list"), ('"go"', "a string")],
)
async def test_non_object_params_get_an_error_frame(
    short_timeouts: Processes, raw: str, kind: str
) -> None:
    result = await run_ws(short_timeouts.ws_url, None, raw=raw)
    _refused(result, f"Invalid params: expected a JSON object, got {kind}")


async def test_a_binary_params_frame_gets_an_error_frame(short_timeouts: Processes) -> None:
    async with aiohttp.ClientSession() as session, session.ws_connect(short_timeouts.ws_url) as ws:
        await ws.send_bytes(json.dumps(TEXT_CREATE).encode())
        result = await until_closed(ws)
    _refused(result, "expected a JSON text frame, got a binary frame")


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"prompt": "a page"}, "prompt must be an object"),
        ({"prompt": None}, "prompt must be an object"),
        ({"prompt": {"text": 4, "images": []}}, "prompt.text must be a string"),
        ({"history": "x", "generationType": "update"}, "history must be a list"),
        ({"optionCodes": 1}, "optionCodes must be a list"),
        ({"prompt": {"text": "", "images": [], "videos": []}}, "prompt.images is empty"),
        ({"inputMode": "text", "prompt": {"text": "", "images": []}}, "prompt.text is empty"),
        ({"inputMode": "video", "prompt": {"text": "a", "videos": []}}, "prompt.videos is empty"),
    ],
)
async def test_params_without_usable_input_start_nothing(
    short_timeouts: Processes, overrides: dict[str, Any], field: str
) -> None:
    result = await run_ws(short_timeouts.ws_url, create_params(**overrides))
    _refused(result, field)
    started = "".join(short_timeouts.agent.log).count("generation started")
    assert started == 0


async def test_the_agent_refuses_a_create_with_no_usable_input(short_timeouts: Processes) -> None:
    target = f"127.0.0.1:{short_timeouts.agent.port}"
    request = pb.GenerateCodeRequest(input_mode=pb.INPUT_MODE_TEXT, prompt=pb.Prompt(text=" "))
    async with grpc.aio.insecure_channel(target) as channel:
        call = pb_grpc.AgentServiceStub(channel).GenerateCode(request, timeout=10)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            async for _ in call:
                pass
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert [v.field for v in bad_request_violations(caught.value)] == ["prompt.text"]


async def _one(session: aiohttp.ClientSession, url: str) -> WsResult:
    async with session.ws_connect(url, max_msg_size=0) as ws:
        await ws.send_str(json.dumps(TEXT_CREATE))
        return await until_closed(ws)


async def test_a_burst_of_sockets_each_ends_with_a_result_or_an_error(tmp_path: Path) -> None:
    chunks = [PAGE[i : i + 512] for i in range(0, len(PAGE), 512)]
    async with FakeOpenAI() as fake:
        fake.add_response(*[responses_turn([Text(chunks)])] * (BURST * VARIANTS))
        env = {
            "OPENAI_API_KEY": "sk-burst-test",
            "OPENAI_BASE_URL": fake.base_url,
            # The burst ran with every limit lifted; admission (which would refuse
            # some of these 480 variants with a clear "busy") has its own tests.
            "S2C_MAX_RUNNING_VARIANTS": "0",
        }
        async with running_processes(tmp_path, env) as suite:
            # No connection pool limit: all the sockets open at once.
            connector = aiohttp.TCPConnector(limit=0)
            async with aiohttp.ClientSession(connector=connector) as session:
                results = await asyncio.gather(*(_one(session, suite.ws_url) for _ in range(BURST)))
    for result in results:
        if result.close_code == 1000:
            assert len(result.of("variantComplete")) == VARIANTS
            assert all(result.last_code(v) == PAGE for v in range(VARIANTS))
        else:
            _refused(result, "")
    assert sum(r.close_code == 1000 for r in results) == BURST
