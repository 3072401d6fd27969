"""OpenAIResponsesSession against the fake OpenAI server, through the real SDK."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from typing import Any

import pytest
from openai import AsyncOpenAI

from services.agent.pricing import Usage, cost_usd
from services.agent.providers import errors, registry
from services.agent.providers.base import (
    AssistantDelta,
    ExecutedTool,
    MediaPart,
    PromptMessage,
    ProviderError,
    SessionConfig,
    StreamEvent,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
    ToolSpec,
)
from services.agent.providers.openai_responses import OpenAIResponsesSession, strict_schema
from tests.fakes.openai_server import (
    FakeOpenAI,
    FunctionCall,
    Pause,
    Reasoning,
    Text,
    TokenUsage,
    http_error,
    responses_turn,
)
from tests.fakes.sse_writes import merged
from tests.providers import sessions
from tests.providers.sessions import Recorder

KEY = "sk-test-DO-NOT-LEAK-7f3a9c"
PNG = b"\x89PNG\r\n\x1a\nfake-png-bytes"
SHOT_URL = "https://cdn.example.com/shot.png"
USER_IMAGE = "data:image/png;base64,aGVsbG8="

CREATE_FILE = ToolSpec(
    "create_file",
    "Create a file",
    {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    },
)
EDIT_FILE = ToolSpec(
    "edit_file",
    "Edit a file",
    {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "old_text": {"type": "string"},
            "new_text": {"type": "string"},
            "count": {"type": "integer"},
        },
        "required": ["old_text", "new_text"],
    },
)

NAME = registry.get("openai").name
SCREENSHOT = ToolSpec("screenshot_preview", "Screenshot the page", {})
EMPTY_STRICT = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}


fake = sessions.openai_fake


@pytest.fixture
async def client(fake: FakeOpenAI) -> AsyncIterator[AsyncOpenAI]:
    sdk = AsyncOpenAI(
        api_key=KEY, base_url=fake.base_url, max_retries=0, _strict_response_validation=True
    )
    yield sdk
    await sdk.close()


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port bound but not listening: connecting to it is refused, with no race."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    yield sock.getsockname()[1]
    sock.close()


def config(base_url: str, **changes: Any) -> SessionConfig:
    base = SessionConfig(
        provider=NAME,
        model_id="gpt-5.4-mini (medium effort)",
        api_name="gpt-5.4-mini",
        effort="medium",
        api_key=KEY,
        base_url=base_url,
        messages=(
            PromptMessage("system", "You build web pages."),
            PromptMessage("user", "Make this page", images=(USER_IMAGE,)),
        ),
        tools=(CREATE_FILE, EDIT_FILE, SCREENSHOT),
        price=registry.PRICES["gpt-5.4-mini"],
        max_retries=0,
    )
    return replace(base, **changes)


def kinds(items: list[dict[str, Any]]) -> list[str]:
    return [item.get("type", f"message:{item.get('role')}") for item in items]


def args_of(events: list[StreamEvent], call_id: str) -> str:
    return "".join(
        e.arguments_delta for e in events if isinstance(e, ToolCallDelta) and e.call_id == call_id
    )


async def test_tool_loop_streams_events_and_continues_statelessly(
    fake: FakeOpenAI, client: AsyncOpenAI
) -> None:
    create_args = json.dumps({"path": "index.html", "content": "<html><body>Hi</body></html>"})
    edit_args = json.dumps({"path": None, "old_text": "Hi", "new_text": "Hello", "count": None})
    fake.add_response(
        responses_turn(
            [
                Reasoning([["Planning: the user ", "wants a page."]]),
                Text(["I'll create ", "index.html."]),
                FunctionCall("call_1", "create_file", create_args, pieces=4),
            ],
            usage=TokenUsage(input=1200, cached=200, output=300, reasoning=100),
            response_id="resp_1",
        ),
        responses_turn(
            [
                FunctionCall("call_2", "edit_file", edit_args, pieces=3),
                FunctionCall("call_3", "screenshot_preview", "{}", pieces=1),
            ],
            usage=TokenUsage(input=2000, cached=1500, output=80),
            response_id="resp_2",
        ),
        responses_turn([Text(["All ", "done."])], response_id="resp_3"),
    )
    session = OpenAIResponsesSession(config(fake.base_url), client=client)
    seen = Recorder()

    turn1 = await session.stream_turn(seen)
    events = seen.drain()
    # However the records fell into reads (a read's consecutive deltas come merged).
    assert merged(events) == [
        ThinkingDelta("Planning: the user wants a page."),
        AssistantDelta("I'll create index.html."),
        ToolCallDelta("call_1", "create_file", create_args),
    ]
    assert turn1.assistant_text == "I'll create index.html."
    assert turn1.tool_calls == [ToolCall("call_1", "create_file", json.loads(create_args))]
    assert turn1.usage == Usage(1000, 300, 200, 0, 1500)
    session.append_tool_results(turn1, [ExecutedTool(turn1.tool_calls[0], True, {"ok": True})])

    turn2 = await session.stream_turn(seen)
    assert args_of(seen.drain(), "call_2") == edit_args
    assert [c.name for c in turn2.tool_calls] == ["edit_file", "screenshot_preview"]
    assert turn2.tool_calls[0].arguments["old_text"] == "Hi"
    shot = (
        MediaPart("shot.png", "image/png", data=PNG),
        MediaPart("web.png", "image/png", url=SHOT_URL),
    )
    session.append_tool_results(
        turn2,
        [
            ExecutedTool(turn2.tool_calls[0], True, {"ok": True, "replaced": 1}),
            ExecutedTool(turn2.tool_calls[1], True, {"ok": True}, media=shot),
        ],
    )

    turn3 = await session.stream_turn(seen)
    assert merged(seen.drain()) == [AssistantDelta("All done.")]
    assert turn3.tool_calls == []
    assert turn3.assistant_text == "All done."

    expected_cost = sum(
        cost_usd(registry.PRICES["gpt-5.4-mini"], t.usage) for t in (turn1, turn2, turn3)
    )
    assert turn2.usage == Usage(500, 80, 1500, 0, 2080)
    assert expected_cost > 0
    assert session.total_cost_usd() == pytest.approx(expected_cost)

    first, second, third = (r.json for r in fake.requests)
    assert all(r.headers["Authorization"] == f"Bearer {KEY}" for r in fake.requests)
    assert first["model"] == "gpt-5.4-mini"
    assert first["stream"] is True
    assert first["store"] is False
    assert first["include"] == ["reasoning.encrypted_content"]
    assert first["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert first["tool_choice"] == "auto"
    assert first["max_output_tokens"] == 50_000
    assert "previous_response_id" not in first
    assert "prompt_cache_retention" not in first
    assert first["input"] == [
        {"role": "system", "content": "You build web pages."},
        {
            "role": "user",
            "content": [
                {"type": "input_image", "image_url": USER_IMAGE, "detail": "high"},
                {"type": "input_text", "text": "Make this page"},
            ],
        },
    ]

    assert kinds(second["input"]) == [
        "message:system", "message:user", "reasoning", "message", "function_call",
        "function_call_output",
    ]  # fmt: skip
    reasoning, message, call, output = second["input"][2:]
    assert reasoning["encrypted_content"] == "enc-resp_1-0"
    assert reasoning["summary"] == [
        {"type": "summary_text", "text": "Planning: the user wants a page."}
    ]
    assert message["content"][0]["text"] == "I'll create index.html."
    assert call["call_id"] == output["call_id"] == "call_1"
    assert call["arguments"] == create_args
    assert output["output"] == json.dumps({"ok": True})

    assert kinds(third["input"])[6:] == [
        "function_call", "function_call", "function_call_output", "function_call_output",
    ]  # fmt: skip
    calls, outputs = third["input"][6:8], third["input"][8:]
    assert [c["call_id"] for c in calls] == [o["call_id"] for o in outputs] == ["call_2", "call_3"]
    assert outputs[0]["output"] == json.dumps({"ok": True, "replaced": 1})
    png_url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert outputs[1]["output"] == [
        {"type": "input_text", "text": json.dumps({"ok": True})},
        {"type": "input_image", "image_url": png_url, "detail": "high"},
        {"type": "input_image", "image_url": SHOT_URL, "detail": "high"},
    ]


async def test_tools_are_sent_as_strict_functions(fake: FakeOpenAI, client: AsyncOpenAI) -> None:
    fake.add_response(responses_turn([Text(["ok"])]))
    session = OpenAIResponsesSession(config(fake.base_url), client=client)
    await session.stream_turn(Recorder())
    tools = {t["name"]: t for t in fake.requests[0].json["tools"]}
    assert tools["edit_file"] == {
        "type": "function",
        "name": "edit_file",
        "description": "Edit a file",
        "strict": True,
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": ["string", "null"]},
                "old_text": {"type": "string"},
                "new_text": {"type": "string"},
                "count": {"type": ["integer", "null"]},
            },
            "required": ["path", "old_text", "new_text", "count"],
            "additionalProperties": False,
        },
    }
    assert tools["screenshot_preview"]["parameters"] == EMPTY_STRICT


def test_strict_schema_reaches_nested_objects_and_array_items() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "images": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "prompt": {"type": "string"},
                        "ratio": {"type": "string", "enum": ["1:1", "16:9"], "default": "1:1"},
                    },
                    "required": ["prompt"],
                },
            },
            "style": {"anyOf": [{"type": "string"}, {"type": "object", "properties": {}}]},
        },
        "required": ["images"],
    }
    out = strict_schema(schema)
    item = out["properties"]["images"]["items"]
    assert out["properties"]["images"]["type"] == "array"  # required: keeps its type
    assert item["required"] == ["prompt", "ratio"]
    assert item["additionalProperties"] is False
    assert item["properties"]["ratio"] == {
        "type": ["string", "null"], "enum": ["1:1", "16:9"], "default": "1:1",
    }  # fmt: skip
    assert out["properties"]["style"]["anyOf"][1:] == [EMPTY_STRICT, {"type": "null"}]
    assert out["required"] == ["images", "style"]
    assert schema["properties"]["images"]["items"]["required"] == ["prompt"]  # input untouched


async def test_summary_sent_only_as_parts_is_emitted_once(
    fake: FakeOpenAI, client: AsyncOpenAI
) -> None:
    fake.add_response(
        responses_turn([Reasoning([["Whole thought."]], deltas=False), Text(["Hi"])]),
        responses_turn([Reasoning([["First. "], ["Second."]]), Text(["Hi"])]),
    )
    session = OpenAIResponsesSession(config(fake.base_url), client=client)
    seen = Recorder()
    await session.stream_turn(seen)
    assert merged(seen.drain()) == [ThinkingDelta("Whole thought."), AssistantDelta("Hi")]
    await session.stream_turn(seen)
    # Deltas seen: parts are not repeated, and separate parts read as paragraphs.
    assert merged(seen.drain()) == [ThinkingDelta("First. \n\nSecond."), AssistantDelta("Hi")]


async def test_model_specific_options(fake: FakeOpenAI, client: AsyncOpenAI) -> None:
    fake.add_response(responses_turn([Text(["a"])]), responses_turn([Text(["b"])]))
    pro = config(fake.base_url, api_name="gpt-5.5", effort=None)
    await OpenAIResponsesSession(pro, client=client).stream_turn(Recorder())
    dated = config(fake.base_url, api_name="gpt-5.4-2026-03-05", effort="high")
    await OpenAIResponsesSession(dated, client=client).stream_turn(Recorder())
    first, second = (r.json for r in fake.requests)
    assert "reasoning" not in first
    assert "prompt_cache_retention" not in first
    assert first["input"][1]["content"][0]["detail"] == "original"
    assert second["prompt_cache_retention"] == "24h"
    assert second["reasoning"] == {"effort": "high", "summary": "auto"}
    assert second["input"][1]["content"][0]["detail"] == "high"


async def test_invalid_arguments_and_failed_tool_results(
    fake: FakeOpenAI, client: AsyncOpenAI
) -> None:
    fake.add_response(
        responses_turn([FunctionCall("call_9", "create_file", '{"path": "a.html", "cont')]),
        responses_turn([Text(["ok"])]),
    )
    session = OpenAIResponsesSession(config(fake.base_url), client=client)
    turn = await session.stream_turn(Recorder())
    assert turn.tool_calls == [
        ToolCall("call_9", "create_file", {}, invalid_json='{"path": "a.html", "cont')
    ]
    image = (MediaPart("x.png", "image/png", url=SHOT_URL),)
    failed = ExecutedTool(turn.tool_calls[0], False, {"error": "invalid JSON"}, media=image)
    session.append_tool_results(turn, [failed])
    await session.stream_turn(Recorder())
    output = fake.requests[1].json["input"][-1]
    assert output == {
        "type": "function_call_output",
        "call_id": "call_9",
        "output": json.dumps({"error": "invalid JSON"}),
    }


ERROR_CASES = [
    (http_error(401), errors.bad_key(NAME)),
    (http_error(403), errors.bad_key(NAME)),
    (http_error(404), errors.unknown_model(NAME, "gpt-5.4-mini")),
    (http_error(429), errors.rate_limited(NAME)),
    (http_error(500), errors.upstream_failed(NAME, 500)),
    (http_error(503), errors.upstream_failed(NAME, 503)),
    (
        http_error(400, f"Bad value near key {KEY}"),
        errors.bad_request(NAME, "Bad value near key *** (400)"),
    ),
]


@pytest.mark.parametrize(("reply", "expected"), ERROR_CASES)
async def test_http_errors_become_provider_errors(
    fake: FakeOpenAI, client: AsyncOpenAI, reply: Any, expected: ProviderError
) -> None:
    fake.add_response(reply)
    session = OpenAIResponsesSession(config(fake.base_url), client=client)
    seen = Recorder()
    with pytest.raises(ProviderError) as caught:
        await session.stream_turn(seen)
    assert caught.value.message == expected.message
    assert KEY not in str(caught.value)
    assert seen.events == []


@pytest.mark.parametrize(
    ("end", "detail"),
    [
        ("error", "The server had an error while processing your request. (server_error)"),
        ("failed", "The server had an error while processing your request. (server_error)"),
        ("incomplete", "the response is incomplete (max_output_tokens)"),
        ("none", "the stream ended before the response completed"),
    ],
)
async def test_stream_failures_after_output(
    fake: FakeOpenAI, client: AsyncOpenAI, end: Any, detail: str
) -> None:
    fake.add_response(responses_turn([Text(["Half a sent", "ence"])], end=end))
    session = OpenAIResponsesSession(config(fake.base_url), client=client)
    seen = Recorder()
    with pytest.raises(ProviderError) as caught:
        await session.stream_turn(seen)
    assert caught.value.message == errors.stream_failed(NAME, detail).message
    assert merged(seen.events) == [AssistantDelta("Half a sentence")]


async def test_connection_refused(closed_port: int) -> None:
    base_url = f"http://127.0.0.1:{closed_port}/v1"
    session = OpenAIResponsesSession(config(base_url))
    with pytest.raises(ProviderError) as caught:
        await session.stream_turn(Recorder())
    await session.close()
    assert caught.value.message == errors.unreachable(NAME, base_url).message
    assert KEY not in caught.value.message


async def test_read_timeout_gives_up_and_hangs_up(fake: FakeOpenAI) -> None:
    fake.add_response(responses_turn([Pause()]))
    session = OpenAIResponsesSession(config(fake.base_url, request_timeout_s=0.3))
    with pytest.raises(ProviderError) as caught:
        await session.stream_turn(Recorder())
    await session.close()
    assert caught.value.message == errors.timed_out(NAME).message
    await asyncio.wait_for(fake.client_disconnected.wait(), 5)


async def test_cancelling_a_turn_closes_the_upstream_stream(
    fake: FakeOpenAI, client: AsyncOpenAI
) -> None:
    fake.add_response(responses_turn([Text(["Hel"]), Pause(), Text(["lo"])]))
    session = OpenAIResponsesSession(config(fake.base_url), client=client)
    seen = Recorder()
    task = asyncio.create_task(session.stream_turn(seen))
    await asyncio.wait_for(seen.first.wait(), 5)
    await asyncio.wait_for(fake.stream_paused.wait(), 5)
    assert fake.disconnects == 0
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(fake.client_disconnected.wait(), 5)
    assert fake.disconnects == 1
    assert seen.events == [AssistantDelta("Hel")]


async def test_owned_client_follows_the_config(fake: FakeOpenAI) -> None:
    fake.add_response(responses_turn([Text(["ok"])]))
    session = OpenAIResponsesSession(config(fake.base_url, request_timeout_s=42.0))
    turn = await session.stream_turn(Recorder())
    await session.close()
    await session.close()
    assert turn.assistant_text == "ok"
    headers = fake.requests[0].headers
    assert headers["Authorization"] == f"Bearer {KEY}"
    assert headers["x-stainless-read-timeout"] == "42.0"


def test_missing_key_is_reported_before_any_request() -> None:
    with pytest.raises(ProviderError) as caught:
        OpenAIResponsesSession(config("http://127.0.0.1:9/v1", api_key=""))
    assert caught.value.message == errors.missing_key(NAME).message
