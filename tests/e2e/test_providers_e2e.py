"""Real provider SDKs behind the whole suite: browser frames and upstream request bodies.

An update request with OpenAI and Anthropic keys runs two variants —
[claude-opus-4-8 (medium), gpt-5.5 (high)] — each against its own fake server, so
each fake sees exactly one variant's conversation.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from services.agent.settings import AgentSettings
from tests.fakes.anthropic_server import FakeAnthropic, Text, Thinking, ToolUse
from tests.fakes.openai_server import (
    FakeOpenAI,
    FunctionCall,
    Pause,
    Reasoning,
    http_error,
    responses_turn,
)
from tests.fakes.openai_server import Text as OText
from tests.suite import WsResult, fake_providers, run_ws, running_suite
from tests.suite import update_params as suite_update_params

OLD = "<!DOCTYPE html><html><body><h1>Old</h1></body></html>"
NEW = "<!DOCTYPE html><html><body><h1>Brand new page</h1><p>" + "x" * 300 + "</p></body></html>"
FINAL = NEW.replace("Brand new", "Final")
OPENAI_KEY = "sk-openai-RECOGNISABLE-1234"
ANTHROPIC_KEY = "sk-ant-RECOGNISABLE-5678"


def update_params(**overrides: Any) -> dict[str, Any]:
    return suite_update_params(
        OLD,
        optionCodes=[OLD, OLD],
        openAiApiKey=OPENAI_KEY,
        anthropicApiKey=ANTHROPIC_KEY,
        **overrides,
    )


@pytest.fixture
def fakes(
    fake_openai: FakeOpenAI, fake_anthropic: FakeAnthropic
) -> tuple[FakeOpenAI, FakeAnthropic]:
    return fake_openai, fake_anthropic


def agent_settings(openai: FakeOpenAI, anthropic: FakeAnthropic) -> AgentSettings:
    return fake_providers(openai=openai.base_url, anthropic=anthropic.base_url)


def script_anthropic(fake: FakeAnthropic) -> None:
    fake.add_turn(
        Thinking.of("Rewriting the page.", signature="sig-ABC=="),
        Text.of("Creating it."),
        ToolUse.of("toolu_1", "create_file", {"path": "index.html", "content": NEW}, size=20),
    )
    fake.add_turn(
        ToolUse.of("toolu_2", "edit_file", {"old_text": "Brand new", "new_text": "Final"})
    )
    fake.add_turn(Text.of("Done: the page is new."))


def script_openai(fake: FakeOpenAI) -> None:
    args = json.dumps({"path": "index.html", "content": NEW})
    fake.add_response(
        responses_turn(
            [
                Reasoning([["Rewriting ", "the page."]]),
                OText(["Creating it."]),
                FunctionCall("call_1", "create_file", args, pieces=9),
            ],
            response_id="resp_1",
        ),
        responses_turn(
            [
                FunctionCall(
                    "call_2",
                    "edit_file",
                    json.dumps({"old_text": "Brand new", "new_text": "Final"}),
                )
            ],
            response_id="resp_2",
        ),
        responses_turn([OText(["Done."])], response_id="resp_3"),
    )


def assert_variant(result: WsResult, variant: int) -> None:
    frames = result.variant_frames(variant)
    kinds = [f["type"] for f in frames]
    assert kinds[-1] == "variantComplete", kinds
    starts = [f for f in frames if f["type"] == "toolStart"]
    assert [s["data"]["name"] for s in starts] == ["create_file", "edit_file"]
    results = [f for f in frames if f["type"] == "toolResult"]
    assert [(r["data"]["name"], r["data"]["ok"]) for r in results] == [
        ("create_file", True),
        ("edit_file", True),
    ]
    assert [r["eventId"] for r in results] == [s["eventId"] for s in starts]
    create_start, create_end = kinds.index("toolStart"), kinds.index("toolResult")
    assert "setCode" in kinds[create_start:create_end]
    assert result.last_code(variant) == FINAL
    assert any(f["type"] == "thinking" for f in frames)


async def test_update_through_anthropic_and_openai(
    tmp_path: Path, fakes: tuple[FakeOpenAI, FakeAnthropic]
) -> None:
    openai, anthropic = fakes
    script_anthropic(anthropic)
    script_openai(openai)
    async with running_suite(tmp_path, agent=agent_settings(openai, anthropic)) as suite:
        result = await run_ws(suite.ws_url, update_params())
    assert result.close_code == 1000
    assert result.frames[0] == {"type": "variantCount", "variantIndex": 0, "value": "2"}
    models = next(f for f in result.frames if f["type"] == "variantModels")["data"]["models"]
    assert models == ["claude-opus-4-8 (medium effort)", "gpt-5.5 (high thinking)"]
    assert_variant(result, 0)
    assert_variant(result, 1)

    # Anthropic continuation: the assistant turn replayed with its signature, results paired.
    bodies = [r.body for r in anthropic.requests]
    assert len(bodies) == 3
    assistant = bodies[1]["messages"][-2]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "Rewriting the page.",
        "signature": "sig-ABC==",
    }
    tool_result = bodies[1]["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result"
    assert tool_result["tool_use_id"] == "toolu_1"
    assert bodies[2]["messages"][-1]["content"][0]["tool_use_id"] == "toolu_2"

    # OpenAI continuation: output items replayed, function_call_output paired by call_id.
    inputs = [r.json["input"] for r in openai.requests]
    assert len(inputs) == 3
    types = [item.get("type") for item in inputs[1]]
    assert types[-3:] == ["message", "function_call", "function_call_output"]
    assert inputs[1][-1]["call_id"] == "call_1"
    assert inputs[2][-1]["call_id"] == "call_2"
    assert "Selected stack: html_tailwind." in json.dumps(inputs[0])
    for request in openai.requests:
        assert request.headers["Authorization"] == f"Bearer {OPENAI_KEY}"


async def test_a_bad_key_fails_one_variant_and_the_other_completes(
    tmp_path: Path, fakes: tuple[FakeOpenAI, FakeAnthropic]
) -> None:
    openai, anthropic = fakes
    anthropic.add_http_error(401)
    script_openai(openai)
    async with running_suite(tmp_path, agent=agent_settings(openai, anthropic)) as suite:
        result = await run_ws(suite.ws_url, update_params())
    assert result.close_code == 1000
    errors = result.of("variantError")
    assert [e["variantIndex"] for e in errors] == [0]
    assert errors[0]["value"].startswith("Incorrect Anthropic API key")
    assert ANTHROPIC_KEY not in json.dumps(result.frames)
    assert_variant(result, 1)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (404, "does not know the model"),
        (429, "rate limit or quota exceeded"),
        (500, "returned a server error (500)"),
    ],
)
async def test_openai_errors_reach_the_browser_as_variant_errors(
    tmp_path: Path, fakes: tuple[FakeOpenAI, FakeAnthropic], status: int, expected: str
) -> None:
    openai, anthropic = fakes
    openai.add_response(http_error(status))
    script_anthropic(anthropic)
    async with running_suite(tmp_path, agent=agent_settings(openai, anthropic)) as suite:
        result = await run_ws(suite.ws_url, update_params())
    errors = result.of("variantError")
    assert [e["variantIndex"] for e in errors] == [1]
    assert expected in errors[0]["value"]
    assert_variant(result, 0)
    assert result.close_code == 1000


async def test_mid_stream_error_and_connection_refused(
    tmp_path: Path, fakes: tuple[FakeOpenAI, FakeAnthropic]
) -> None:
    openai, anthropic = fakes
    openai.add_response(responses_turn([OText(["Start"])], end="error"))
    await anthropic.stop()  # nothing listens there any more: connection refused
    async with running_suite(tmp_path, agent=agent_settings(openai, anthropic)) as suite:
        result = await run_ws(suite.ws_url, update_params())
    errors = {e["variantIndex"]: e["value"] for e in result.of("variantError")}
    assert errors[0].startswith("Could not connect to Anthropic")
    assert "OpenAI stream failed" in errors[1]
    # Every variant failed: upstream's generation error, then close 4332.
    assert result.frames[-1] == {
        "type": "error",
        "value": "Error generating code. Please contact support.",
    }
    assert result.close_code == 4332


async def test_browser_cancel_closes_the_model_stream(
    tmp_path: Path, fakes: tuple[FakeOpenAI, FakeAnthropic]
) -> None:
    openai, anthropic = fakes
    args = json.dumps({"path": "index.html", "content": NEW})
    openai.add_response(
        responses_turn([OText(["Working"]), FunctionCall("c", "create_file", args), Pause()])
    )
    anthropic.add_turn(Text.of("Working"), hang=True)
    async with running_suite(tmp_path, agent=agent_settings(openai, anthropic)) as suite:
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(suite.ws_url) as ws:
                await ws.send_str(json.dumps(update_params()))
                seen: set[int] = set()
                async for message in ws:
                    frame = json.loads(message.data)
                    if frame["type"] == "assistant":
                        seen.add(frame["variantIndex"])
                    if seen == {0, 1}:
                        break
                await ws.close(code=4333)
        await asyncio.wait_for(openai.client_disconnected.wait(), 10)
        await asyncio.wait_for(anthropic.wait_disconnect(), 10)
        generation = suite.agent.manager.generations()[0]
        assert generation.task is not None
        await asyncio.wait({generation.task}, timeout=10)
        assert generation.status == "cancelled"
