"""AnthropicSession against a fake Messages API, through the real `anthropic` SDK."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import socket
from typing import Any

import anthropic
import pytest
from PIL import Image

from services.agent.pricing import Usage, cost_usd
from services.agent.providers import errors, registry
from services.agent.providers.anthropic import AnthropicSession
from services.agent.providers.base import (
    AssistantDelta,
    ExecutedTool,
    MediaPart,
    PromptMessage,
    ProviderError,
    SessionConfig,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
    ToolSpec,
)
from tests.fakes.anthropic_server import (
    FakeAnthropic,
    StreamError,
    Text,
    Thinking,
    ToolUse,
    TurnUsage,
)
from tests.fakes.sse_writes import merged
from tests.providers import sessions
from tests.providers.sessions import Recorder

FAKE_KEY = sessions.ANTHROPIC_KEY
MODEL = "claude-opus-4-8"
# Signatures are opaque base64; these carry the characters a careless re-encode would change.
SIGNATURE_1 = "EqQBCkgIARABGAIiQF+ake/Sig+nature=="
SIGNATURE_2 = "ErUBCkYIBxgCIkB/second+/signature/="
TOOLS = (
    ToolSpec(
        "create_file",
        "Create the main HTML file.",
        {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        },
    ),
    ToolSpec(
        "edit_file",
        "Edit the file.",
        {"type": "object", "properties": {"old_text": {"type": "string"}}},
    ),
)

NAME = registry.get("anthropic").name


def png(width: int = 1, height: int = 1) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (0, 90, 200)).save(out, format="PNG")
    return out.getvalue()


def data_url(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


def base64_image(data: bytes) -> dict[str, Any]:
    source = {"type": "base64", "media_type": "image/png", "data": base64.b64encode(data).decode()}
    return {"type": "image", "source": source}


def url_image(url: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "url", "url": url}}


def image_size(block: dict[str, Any]) -> tuple[int, int]:
    return Image.open(io.BytesIO(base64.b64decode(block["source"]["data"]))).size


def without_cache_control(value: Any) -> Any:
    """`value` with every cache_control key removed and string contents spelt as one
    text block (the same prompt to the API), to compare the content alone."""
    if isinstance(value, dict):
        out = {k: without_cache_control(v) for k, v in value.items() if k != "cache_control"}
        if isinstance(out.get("content"), str) and out.get("role") in ("user", "assistant"):
            out["content"] = [{"type": "text", "text": out["content"]}]
        return out
    if isinstance(value, list):
        return [without_cache_control(v) for v in value]
    return value


def make_config(
    base_url: str,
    *,
    effort: str | None = "high",
    messages: tuple[PromptMessage, ...] | None = None,
    timeout_s: float = 30.0,
) -> SessionConfig:
    return SessionConfig(
        provider=NAME,
        model_id=f"{MODEL} (high effort)",
        api_name=MODEL,
        effort=effort,
        api_key=FAKE_KEY,
        base_url=base_url,
        messages=messages
        or (
            PromptMessage("system", "You build web pages."),
            PromptMessage("user", "A landing page"),
        ),
        tools=TOOLS,
        price=registry.PRICES[MODEL],
        max_retries=0,
        request_timeout_s=timeout_s,
    )


fake = sessions.anthropic_fake
client = sessions.anthropic_client


async def test_a_tool_loop_streams_deltas_and_replays_the_conversation(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    create_args = {"path": "index.html", "content": "<html><body><h1>Hi</h1></body></html>"}
    edit_args = {"old_text": "Hi", "new_text": "Hello"}
    thinking_1 = Thinking.of("The user wants a landing page.", signature=SIGNATURE_1)
    text_1 = Text.of("I'll create index.html.", size=8)
    create = ToolUse.of("toolu_01", "create_file", create_args, size=20)
    thinking_2 = Thinking.of("Fix the heading.", signature=SIGNATURE_2)
    edit = ToolUse.of("toolu_02", "edit_file", edit_args, size=10)
    fake.add_turn(
        thinking_1,
        text_1,
        create,
        usage=TurnUsage(1200, 300, cache_read_input_tokens=0, cache_creation_input_tokens=1000),
    )
    fake.add_turn(thinking_2, edit, usage=TurnUsage(60, 80, 1500, 200))
    fake.add_turn(Text.of("Done: the page is ready."), usage=TurnUsage(40, 20, 1900, 0))
    session = AnthropicSession(make_config(fake.base_url), client=client)
    screenshot = png(4, 3)

    turn_1_events = Recorder()
    turn_1 = await session.stream_turn(turn_1_events)
    media = (
        MediaPart("preview_desktop.png", "image/png", data=screenshot),
        MediaPart("hero.png", "image/png", url="https://cdn.example.com/hero.png"),
    )
    created = ExecutedTool(turn_1.tool_calls[0], True, {"content": "Created index.html"}, media)
    session.append_tool_results(turn_1, [created])
    turn_2_events = Recorder()
    turn_2 = await session.stream_turn(turn_2_events)
    dropped = (MediaPart("dropped.png", "image/png", data=screenshot),)
    failed = ExecutedTool(turn_2.tool_calls[0], False, {"error": "old_text not found"}, dropped)
    session.append_tool_results(turn_2, [failed])
    turn_3_events = Recorder()
    turn_3 = await session.stream_turn(turn_3_events)

    # Stream events: every delta, in order (runs that came in one read are merged).
    assert len(create.json_chunks) >= 3
    assert merged(turn_1_events.events) == [
        ThinkingDelta("".join(thinking_1.chunks)),
        AssistantDelta("".join(text_1.chunks)),
        ToolCallDelta("toolu_01", "create_file", "".join(create.json_chunks)),
    ]
    assert merged(turn_2_events.events) == [
        ThinkingDelta("".join(thinking_2.chunks)),
        ToolCallDelta("toolu_02", "edit_file", "".join(edit.json_chunks)),
    ]
    assert merged(turn_3_events.events) == [AssistantDelta("Done: the page is ready.")]

    # Turns: calls, text and usage (cache reads and writes counted apart).
    assert turn_1.assistant_text == "I'll create index.html."
    assert turn_1.tool_calls == [ToolCall("toolu_01", "create_file", create_args)]
    assert turn_1.usage == Usage(1200, 300, 0, 1000, 2500)
    assert turn_2.tool_calls == [ToolCall("toolu_02", "edit_file", edit_args)]
    assert turn_2.usage == Usage(60, 80, 1500, 200, 1840)
    assert (turn_3.assistant_text, turn_3.tool_calls) == ("Done: the page is ready.", [])
    total = Usage(1300, 400, 3400, 1200, 0)
    assert session.total_cost_usd() == pytest.approx(cost_usd(registry.PRICES[MODEL], total))
    assert session.total_cost_usd() == pytest.approx(
        (1300 * 5.0 + 400 * 25.0 + 3400 * 0.5 + 1200 * 6.25) / 1e6
    )

    # First request: system, tools with eager streaming, adaptive thinking.
    first = without_cache_control(fake.requests[0].body)
    assert first["model"] == MODEL
    assert first["max_tokens"] == 50_000
    assert first["system"] == [{"type": "text", "text": "You build web pages."}]
    assert first["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "A landing page"}]}
    ]
    assert first["thinking"] == {"type": "adaptive"}
    assert first["output_config"] == {"effort": "high"}
    assert "cache_control" not in first  # explicit breakpoints instead (see below)
    assert "temperature" not in first
    assert first["tools"][0] == {
        "name": "create_file",
        "description": "Create the main HTML file.",
        "input_schema": TOOLS[0].input_schema,
        "eager_input_streaming": True,
    }

    # Second request: the assistant content verbatim, then the paired tool result.
    second = without_cache_control(fake.requests[1].body)["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[1]["content"] == [
        {
            "type": "thinking",
            "thinking": "The user wants a landing page.",
            "signature": SIGNATURE_1,
        },
        {"type": "text", "text": "I'll create index.html."},
        {"type": "tool_use", "id": "toolu_01", "name": "create_file", "input": create_args},
    ]
    assert second[2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_01",
            "is_error": False,
            "content": [
                {"type": "text", "text": json.dumps({"content": "Created index.html"})},
                {"type": "text", "text": "preview_desktop.png"},
                base64_image(screenshot),
                {"type": "text", "text": "hero.png"},
                url_image("https://cdn.example.com/hero.png"),
            ],
        }
    ]

    # Third request: the earlier prefix unchanged (cacheable); a failed tool is text only.
    third = without_cache_control(fake.requests[2].body)["messages"]
    assert third[:3] == second
    assert third[3]["content"][0] == {
        "type": "thinking",
        "thinking": "Fix the heading.",
        "signature": SIGNATURE_2,
    }
    assert third[4]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_02",
            "is_error": True,
            "content": json.dumps({"error": "old_text not found"}),
        }
    ]


async def test_without_effort_there_is_no_thinking_and_temperature_is_zero(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.add_turn(Text.of("ok"))
    session = AnthropicSession(make_config(fake.base_url, effort=None), client=client)

    await session.stream_turn(Recorder())

    body = fake.requests[0].body
    assert body["temperature"] == 0.0
    assert "thinking" not in body
    assert "output_config" not in body


async def test_prompt_images_come_first_as_base64_or_url_and_videos_are_left_out(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    screenshot = png(3, 2)
    messages = (
        PromptMessage("system", "sys"),
        PromptMessage(
            "user",
            "Make this",
            images=(data_url(screenshot), "https://example.com/ref.jpg"),
            videos=("data:video/mp4;base64,AAAA",),
        ),
        PromptMessage("assistant", "<html>v1</html>"),
        PromptMessage("user", "Make it blue"),
    )
    fake.add_turn(Text.of("ok"))
    config = make_config(fake.base_url, messages=messages)
    session = AnthropicSession(config, client=client, prompt_caching=False)

    await session.stream_turn(Recorder())

    assert fake.requests[0].body["messages"] == [
        {
            "role": "user",
            "content": [
                base64_image(screenshot),
                url_image("https://example.com/ref.jpg"),
                {"type": "text", "text": "Make this"},
            ],
        },
        {"role": "assistant", "content": "<html>v1</html>"},
        {"role": "user", "content": "Make it blue"},
    ]


@pytest.mark.parametrize(("image_count", "first_size"), [(20, (30, 2100)), (21, (28, 2000))])
async def test_more_than_20_prompt_images_shrink_to_2000_px(
    fake: FakeAnthropic,
    client: anthropic.AsyncAnthropic,
    image_count: int,
    first_size: tuple[int, int],
) -> None:
    images = (data_url(png(30, 2100)),) + (data_url(png()),) * (image_count - 1)
    messages = (PromptMessage("system", "sys"), PromptMessage("user", "these", images=images))
    fake.add_turn(Text.of("ok"))
    session = AnthropicSession(make_config(fake.base_url, messages=messages), client=client)

    await session.stream_turn(Recorder())

    content = fake.requests[0].body["messages"][0]["content"]
    assert len(content) == image_count + 1
    assert image_size(content[0]) == first_size


async def test_a_tool_image_crossing_20_images_shrinks_the_history_too(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    tall = png(30, 2100)
    images = (data_url(tall),) + (data_url(png()),) * 19
    messages = (PromptMessage("system", "sys"), PromptMessage("user", "these", images=images))
    fake.add_turn(ToolUse.of("toolu_1", "create_file", {"content": "<html></html>"}))
    fake.add_turn(Text.of("ok"))
    session = AnthropicSession(make_config(fake.base_url, messages=messages), client=client)

    turn = await session.stream_turn(Recorder())
    tool_image = MediaPart("preview.png", "image/png", data=png(10, 2200))
    session.append_tool_results(turn, [ExecutedTool(turn.tool_calls[0], True, {}, (tool_image,))])
    await session.stream_turn(Recorder())

    first, second = (r.body["messages"] for r in fake.requests)
    assert first[0]["content"][0]["source"]["data"] == base64.b64encode(tall).decode()
    assert image_size(second[0]["content"][0]) == (28, 2000)
    result_content = second[2]["content"][0]["content"]
    assert image_size(result_content[2]) == (9, 2000)


async def test_cut_off_tool_arguments_are_reported_as_invalid_json(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    raw = '{"path": "index.html", "content": "<html><bo'
    fake.add_turn(ToolUse("toolu_9", "create_file", (raw[:20], raw[20:])), stop_reason="max_tokens")
    session = AnthropicSession(make_config(fake.base_url), client=client)

    turn = await session.stream_turn(Recorder())

    assert turn.tool_calls == [ToolCall("toolu_9", "create_file", {}, invalid_json=raw)]


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (401, errors.bad_key(NAME)),
        (403, errors.bad_key(NAME)),
        (404, errors.unknown_model(NAME, MODEL)),
        (429, errors.rate_limited(NAME)),
        (500, errors.upstream_failed(NAME, 500)),
        (529, errors.upstream_failed(NAME, 529)),
    ],
)
async def test_http_errors_become_actionable_messages_without_the_key(
    fake: FakeAnthropic, status: int, expected: ProviderError
) -> None:
    fake.add_http_error(status, f"rejected key {FAKE_KEY}")
    session = AnthropicSession(make_config(fake.base_url))

    with pytest.raises(ProviderError) as caught:
        await session.stream_turn(Recorder())
    await session.close()
    await session.close()

    assert caught.value.message == expected.message
    assert FAKE_KEY not in str(caught.value)
    assert len(fake.requests) == 1  # max_retries=0 reached the SDK
    headers = fake.requests[0].headers
    assert FAKE_KEY in headers.get("Authorization", "") + headers.get("x-api-key", "")


async def test_a_bad_request_quotes_the_api_with_the_key_redacted(fake: FakeAnthropic) -> None:
    fake.add_http_error(400, f"messages: bad thing near {FAKE_KEY}")
    session = AnthropicSession(make_config(fake.base_url))

    with pytest.raises(ProviderError) as caught:
        await session.stream_turn(Recorder())
    await session.close()

    assert caught.value.message == (
        "Anthropic rejected the request: invalid_request_error: messages: bad thing near *** (400)"
    )


async def test_an_error_event_mid_stream_fails_the_turn_as_streamed(fake: FakeAnthropic) -> None:
    fake.add_turn(Text.of("Working on"), error=StreamError("overloaded_error", "Overloaded"))
    session = AnthropicSession(make_config(fake.base_url))
    events = Recorder()

    with pytest.raises(ProviderError) as caught:
        await session.stream_turn(events)
    await session.close()

    assert (
        caught.value.message == errors.stream_failed(NAME, "overloaded_error: Overloaded").message
    )
    assert merged(events.events) == [AssistantDelta("Working on")]


async def test_a_connection_cut_mid_stream_fails_the_turn_as_streamed(fake: FakeAnthropic) -> None:
    fake.add_turn(Text.of("Working on"), drop=True)
    session = AnthropicSession(make_config(fake.base_url))

    with pytest.raises(ProviderError) as caught:
        await session.stream_turn(Recorder())
    await session.close()

    assert caught.value.message == errors.stream_failed(NAME, "the connection was lost").message


async def test_a_silent_stream_times_out(fake: FakeAnthropic) -> None:
    fake.add_turn(Text.of("Working on"), hang=True)
    session = AnthropicSession(make_config(fake.base_url, timeout_s=0.3))

    with pytest.raises(ProviderError) as caught:
        await session.stream_turn(Recorder())
    await session.close()

    assert caught.value.message == errors.timed_out(NAME).message


async def test_a_refused_connection_names_the_base_url() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}"
    session = AnthropicSession(make_config(base_url))

    with pytest.raises(ProviderError) as caught:
        await session.stream_turn(Recorder())
    await session.close()

    assert caught.value.message == errors.unreachable(NAME, base_url).message
    assert FAKE_KEY not in caught.value.message


async def test_cancelling_a_turn_closes_the_stream(
    fake: FakeAnthropic, client: anthropic.AsyncAnthropic
) -> None:
    fake.add_turn(Text.of("Working on it"), hang=True)
    session = AnthropicSession(make_config(fake.base_url), client=client)
    events = Recorder()

    task = asyncio.create_task(session.stream_turn(events))
    await events.first.wait()
    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(fake.wait_disconnect(), timeout=10)
