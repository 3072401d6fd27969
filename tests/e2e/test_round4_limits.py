"""Issue 35's attacks on a project's size and a model's output (items 7-9), replayed
against the real gateway, agent and tool worker processes.

One suite for the module: a models file of one Chat Completions endpoint, `ollama`,
served by the fake server, with `flood` (a model that calls tools) and `old-coder` (a
`tools = false` model: text mode). Each attack is scaled down to what shows its bound;
the figures of the full-size attacks are in the commits that fixed them.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import grpc
import pytest
import pytest_asyncio
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.common.v1 import common_pb2

from services.common.errors import bad_request_violations
from services.common.project_limits import MAX_FILE_BYTES
from tests.fakes.openai_server import FakeOpenAI, Text, chat_turn
from tests.processes import Processes, running_processes
from tests.suite import WsResult, create_params, generation_refusal, run_ws, update_params

pytestmark = pytest.mark.asyncio(loop_scope="module")

MODELS = """[[endpoint]]
name = "ollama"
api = "chat"
base_url = "{base_url}"
[[endpoint.model]]
id = "flood"
[[endpoint.model]]
id = "old-coder"
tools = false
"""
VARIANTS = 4  # what a create pinning one model runs
TOO_MANY_FILES = "65 files; a project holds at most 64 (S2C_MAX_PROJECT_FILES)"


@dataclass
class Stack:
    processes: Processes
    model: FakeOpenAI

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.processes.gateway.port}"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    data = tmp_path_factory.mktemp("round4")
    async with FakeOpenAI() as model:
        models = data / "models.toml"
        models.write_text(MODELS.format(base_url=model.base_url), encoding="utf-8")
        env = {"S2C_MODELS_FILE": str(models), "S2C_PROVIDER_MAX_RETRIES": "0"}
        async with running_processes(data / "run", env) as processes:
            yield Stack(processes, model)


def project(count: int) -> dict[str, str]:
    return {f"p{i}.html": "<p>x</p>" for i in range(count)}


def text_create(model: str) -> dict[str, Any]:
    return create_params(
        inputMode="text",
        prompt={"text": "A shop page", "images": [], "videos": []},
        models=[model],
    )


# -- item 7: a project's file count -------------------------------------------------------


async def test_an_update_of_more_files_than_a_project_holds_is_refused_by_name(
    stack: Stack,
) -> None:
    result = await run_ws(stack.processes.ws_url, update_params("<p>a</p>", files=project(65)))
    assert result.close_code == 4332
    assert [f["value"] for f in result.of("error")] == [f"Invalid params: files: {TOO_MANY_FILES}"]

    request = pb.GenerateCodeRequest(
        generation_type=pb.GENERATION_TYPE_UPDATE,
        input_mode=pb.INPUT_MODE_TEXT,
        prompt=pb.Prompt(text="Make it new"),
        files=[common_pb2.FileState(path=p, content=c) for p, c in project(65).items()],
    )
    refused = await generation_refusal(stack.processes.agent.port, request)
    assert refused.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert [(v.field, v.description) for v in bad_request_violations(refused)] == [
        ("files", "more than 64 files; a project holds at most 64 (S2C_MAX_PROJECT_FILES)")
    ]


async def test_a_params_frame_of_a_hundred_thousand_values_is_refused_unparsed(
    stack: Stack,
) -> None:
    # 60,000 one-byte files (120,000 values): a million stalled both loops for seconds.
    params = update_params("<p>a</p>", files={f"f{i}.js": "x" for i in range(60_000)})
    result = await run_ws(stack.processes.ws_url, params)
    assert result.close_code == 4332
    assert [f["value"] for f in result.of("error")] == [
        "Invalid params: the JSON holds more than 100000 values, the most it may"
    ]


async def test_an_export_of_more_files_than_a_project_holds_is_refused(stack: Stack) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{stack.http}/api/export", json={"files": project(65)}) as r:
            assert r.status == 413
            assert await r.json() == {"detail": f"files: {TOO_MANY_FILES}"}
        async with session.post(f"{stack.http}/api/export", json={"files": project(64)}) as r:
            assert r.status == 200
            assert r.content_type == "application/zip"


# -- item 8: a text-mode page ---------------------------------------------------------------


def code_bytes(result: WsResult, variant: int) -> int:
    """The most code one variant's frames ever held (setCode frames are whole files)."""
    return max((len(f["value"]) for f in result.of("setCode", variant)), default=0)


async def test_a_text_mode_page_stops_at_a_files_limit_and_goes_no_further(stack: Stack) -> None:
    page = "<p>" + "x" * (MAX_FILE_BYTES + (128 << 10)) + "</p>"  # past a file's 2 MiB
    answer = f"Here.\n```html\n{page}\n```\n"
    pieces = [answer[i : i + (64 << 10)] for i in range(0, len(answer), 64 << 10)]
    stack.model.add_chat(*[chat_turn([Text(pieces)]) for _ in range(VARIANTS)])

    result = await run_ws(stack.processes.ws_url, text_create("ollama:old-coder"))

    stopped = (
        f"Stopped: the page in the model's answer grew past {MAX_FILE_BYTES} bytes, the most "
        "one file may hold."
    )
    assert [f["value"] for f in result.of("variantError")] == [stopped] * VARIANTS
    assert all(0 < code_bytes(result, v) <= MAX_FILE_BYTES for v in range(VARIANTS))


# -- item 9: a flood of tool calls -------------------------------------------------------


async def test_a_tool_call_flood_is_cut_to_the_bound_and_stopped_by_name(stack: Stack) -> None:
    tag = '<tool_call>{"name": "retrieve_option", "arguments": {"option_number": 1}}</tool_call>'
    stack.model.requests.clear()
    # Three flooded turns a variant; spare replies would show a run that went on.
    stack.model.add_chat(*[chat_turn([Text([tag] * 40)]) for _ in range(VARIANTS * 4)])

    result = await run_ws(stack.processes.ws_url, text_create("ollama:flood"))

    stopped = (
        "Stopped: the model asked for more than 16 tool calls in one turn 3 times; at most 16 "
        "run per turn (S2C_MAX_TOOL_CALLS_PER_TURN)."
    )
    assert [f["value"] for f in result.of("variantError")] == [stopped] * VARIANTS
    assert len(stack.model.requests) == VARIANTS * 3
    for request in stack.model.requests:
        messages = request.json["messages"]
        replayed = [m for m in messages if m["role"] == "assistant" and m.get("tool_calls")]
        assert all(len(m["tool_calls"]) == 16 for m in replayed)
        answers = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
        assert len(answers) == 16 * len(replayed)
        told = [a["dropped_calls"] for a in answers if "dropped_calls" in a]
        assert told == [
            "24 more tool calls of this turn were dropped, not run: at most 16 run per turn. "
            "Ask again for what still needs doing."
        ] * len(replayed)
    # The browser hears of the calls run (two turns of 16 a variant), no others.
    assert len(result.of("toolStart")) == VARIANTS * 2 * 16
