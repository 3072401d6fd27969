"""GeminiSession against a fake Gemini API, through the real `google-genai` SDK."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import socket
from typing import Any

import pytest
from google import genai

from services.agent.pricing import Usage, cost_usd
from services.agent.providers import errors, registry
from services.agent.providers.base import (
    AssistantDelta,
    ExecutedTool,
    MediaPart,
    PromptMessage,
    ProviderError,
    ProviderTurn,
    SessionConfig,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
    ToolSpec,
)
from services.agent.providers.gemini import GeminiSession
from tests.fakes.gemini_server import Call, FakeGemini, Say, Thought, TurnUsage, http_error
from tests.fakes.sse_writes import merged
from tests.providers import sessions
from tests.providers.sessions import Recorder

FAKE_KEY = sessions.GEMINI_KEY
MODEL = "gemini-3.5-flash"
# Bytes whose standard base64 has `+` and `/`, which the SDK echoes URL-safe.
SIGNATURE_1 = bytes(range(250, 256)) + b"thought-1"
SIGNATURE_2 = b"\xfb\xff\xbf" + b"thought-2"
PNG_BYTES = b"\x89PNG\r\n\x1a\n" + b"fake-png-body"
TOOLS = (
    ToolSpec(
        "create_file",
        "Create the main HTML file.",
        {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        },
    ),
    ToolSpec("edit_file", "Edit the file.", {"type": "object", "properties": {}}),
)

NAME = registry.get("gemini").name


def field(obj: dict[str, Any], camel: str) -> Any:
    """`obj[camel]`, also under its snake_case spelling: the SDK writes nested keys
    in snake_case and top-level ones in camelCase, and the API takes both."""
    snake = re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), camel)
    return obj[camel] if camel in obj else obj[snake]


def decode(text: str) -> bytes:
    """Base64 in any of the spellings the SDK may use (URL-safe, unpadded)."""
    return base64.urlsafe_b64decode(
        text.replace("+", "-").replace("/", "_") + "=" * (-len(text) % 4)
    )


def blob(part: dict[str, Any]) -> tuple[str, str, bytes]:
    inline = field(part, "inlineData")
    return field(inline, "mimeType"), field(inline, "displayName"), decode(inline["data"])


def signature(part: dict[str, Any]) -> bytes:
    return decode(field(part, "thoughtSignature"))


def make_config(
    base_url: str,
    *,
    effort: str | None = "high",
    messages: tuple[PromptMessage, ...] | None = None,
    timeout_s: float = 30.0,
) -> SessionConfig:
    return SessionConfig(
        provider=NAME,
        model_id=f"{MODEL} (high)",
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


fake = sessions.gemini_fake
client = sessions.gemini_client


async def test_a_tool_loop_streams_deltas_and_replays_the_conversation(
    fake: FakeGemini, client: genai.Client
) -> None:
    create_args = {"path": "index.html", "content": "<html><body><h1>Hi</h1></body></html>"}
    edit_args = {"old_text": "Hi", "new_text": "Hello"}
    hero = b"\xff\xd8\xff" + b"jpeg-hero"
    hero_url = fake.add_asset("hero", hero, "image/jpeg")
    missing_url = f"{fake.base_url}/assets/missing"
    fake.add_turn(
        Thought("**Planning**\n"),
        Thought("The user wants a page."),
        Say("I'll create "),
        Say("index.html."),
        Call("create_file", create_args, id="call-1", signature=SIGNATURE_1),
        usage=TurnUsage(prompt=400, candidates=120, thoughts=30, cached=100),
    )
    fake.add_turn(
        Thought("Fix the heading."),
        Call("edit_file", edit_args, signature=SIGNATURE_2),
        usage=TurnUsage(prompt=700, candidates=40, thoughts=10, cached=350),
    )
    fake.add_turn(Say("Done."), usage=TurnUsage(prompt=800, candidates=5))
    session = GeminiSession(make_config(fake.base_url), client=client)

    turn_1_events = Recorder()
    turn_1 = await session.stream_turn(turn_1_events)
    session.append_tool_results(
        turn_1,
        [
            ExecutedTool(
                turn_1.tool_calls[0],
                ok=True,
                result={"content": "Created index.html"},
                media=(
                    MediaPart("preview_desktop.png", "image/png", data=PNG_BYTES),
                    MediaPart("hero.png", "image/png", url=hero_url),
                    MediaPart("gone.png", "image/png", url=missing_url),
                ),
            )
        ],
    )
    turn_2_events = Recorder()
    turn_2 = await session.stream_turn(turn_2_events)
    session.append_tool_results(
        turn_2,
        [
            ExecutedTool(
                turn_2.tool_calls[0],
                ok=False,
                result={"error": "old_text not found"},
                media=(MediaPart("after.png", "image/png", data=PNG_BYTES),),
            )
        ],
    )
    turn_3 = await session.stream_turn(Recorder())

    # Stream events; Gemini sends arguments whole, so each call is one fragment.
    assert merged(turn_1_events.events) == merged(
        [
            ThinkingDelta("**Planning**\n"),
            ThinkingDelta("The user wants a page."),
            AssistantDelta("I'll create "),
            AssistantDelta("index.html."),
            ToolCallDelta("call-1", "create_file", json.dumps(create_args)),
        ]
    )
    generated_id = turn_2.tool_calls[0].id
    assert re.fullmatch(r"tool-[0-9a-f]{12}", generated_id)
    assert turn_2_events.events == [
        ThinkingDelta("Fix the heading."),
        ToolCallDelta(generated_id, "edit_file", json.dumps(edit_args)),
    ]

    # Turns: calls, text, usage (input excludes cached; output includes thoughts).
    assert turn_1.assistant_text == "I'll create index.html."
    assert turn_1.tool_calls == [ToolCall("call-1", "create_file", create_args)]
    assert turn_1.usage == Usage(300, 150, 100, 0, 550)
    assert turn_2.tool_calls == [ToolCall(generated_id, "edit_file", edit_args)]
    assert turn_2.usage == Usage(350, 50, 350, 0, 750)
    assert (turn_3.assistant_text, turn_3.tool_calls, turn_3.usage) == (
        "Done.",
        [],
        Usage(800, 5, 0, 0, 805),
    )
    total = Usage(1450, 205, 450, 0, 0)
    assert session.total_cost_usd() == pytest.approx(cost_usd(registry.PRICES[MODEL], total))
    assert session.total_cost_usd() == pytest.approx((1450 * 0.5 + 205 * 3.0 + 450 * 0.05) / 1e6)

    # First request: config, system instruction, tools.
    first = fake.requests[0]
    assert first.model == MODEL
    body = first.body
    generation = body["generationConfig"]
    assert generation["temperature"] == 1.0
    assert generation["maxOutputTokens"] == 50_000
    thinking = field(generation, "thinkingConfig")
    assert (field(thinking, "thinkingLevel"), field(thinking, "includeThoughts")) == ("HIGH", True)
    assert body["systemInstruction"]["parts"] == [{"text": "You build web pages."}]
    assert body["contents"] == [{"role": "user", "parts": [{"text": "A landing page"}]}]
    declaration = body["tools"][0]["functionDeclarations"][0]
    assert (declaration["name"], declaration["description"]) == (
        TOOLS[0].name,
        TOOLS[0].description,
    )
    assert field(declaration, "parametersJsonSchema") == TOOLS[0].input_schema

    # Second request: the model content verbatim, then one user content of responses.
    second = fake.requests[1].body["contents"]
    assert [c["role"] for c in second] == ["user", "model", "user"]
    model_parts = second[1]["parts"]
    assert model_parts[:4] == [
        {"text": "**Planning**\n", "thought": True},
        {"text": "The user wants a page.", "thought": True},
        {"text": "I'll create "},
        {"text": "index.html."},
    ]
    assert field(model_parts[4], "functionCall") == {
        "id": "call-1",
        "name": "create_file",
        "args": create_args,
    }
    assert signature(model_parts[4]) == SIGNATURE_1
    [response_part] = second[2]["parts"]
    response = field(response_part, "functionResponse")
    assert (response["id"], response["name"]) == ("call-1", "create_file")
    assert response["response"] == {"content": "Created index.html"}
    # Bytes go in as they are; a URL is downloaded (type from its header); a lost one is skipped.
    assert [blob(p) for p in response["parts"]] == [
        ("image/png", "preview_desktop.png", PNG_BYTES),
        ("image/jpeg", "hero.png", hero),
    ]
    assert sorted(fake.asset_requests) == ["hero", "missing"]  # fetched concurrently

    # Third request: prefix unchanged; an id the API never sent is not sent back.
    third = fake.requests[2].body["contents"]
    assert third[:3] == second
    assert field(third[3]["parts"][1], "functionCall") == {"name": "edit_file", "args": edit_args}
    assert signature(third[3]["parts"][1]) == SIGNATURE_2
    response = field(third[4]["parts"][0], "functionResponse")
    assert "id" not in response
    assert response["response"] == {"error": "old_text not found"}
    assert [blob(p) for p in response["parts"]] == [("image/png", "after.png", PNG_BYTES)]


async def test_prompt_media_follow_the_text_in_native_form(
    fake: FakeGemini, client: genai.Client
) -> None:
    def data_url(mime: str, data: bytes) -> str:
        return f"data:{mime};base64,{base64.b64encode(data).decode()}"

    messages = (
        PromptMessage("system", "sys"),
        PromptMessage(
            "user",
            "Make this",
            images=(
                data_url("image/png", PNG_BYTES),
                "https://example.com/ref.jpg",
                data_url("application/octet-stream", PNG_BYTES),
                data_url("application/octet-stream", b"unknown"),
            ),
            videos=(data_url("video/mp4", b"\0\0\0\x18ftypmp42"),),
        ),
        PromptMessage("assistant", "<html>v1</html>"),
    )
    fake.add_turn(Say("ok"))
    session = GeminiSession(make_config(fake.base_url, messages=messages), client=client)

    await session.stream_turn(Recorder())

    user, model = fake.requests[0].body["contents"]
    assert model == {"role": "model", "parts": [{"text": "<html>v1</html>"}]}
    text, image, remote, sniffed, video = user["parts"]
    assert text == {"text": "Make this"}
    assert field(field(image, "inlineData"), "mimeType") == "image/png"
    assert field(image, "mediaResolution") == {"level": "MEDIA_RESOLUTION_ULTRA_HIGH"}
    file_data = field(remote, "fileData")
    assert field(file_data, "fileUri") == "https://example.com/ref.jpg"
    assert field(file_data, "mimeType") == "image/jpeg"
    assert field(field(sniffed, "inlineData"), "mimeType") == "image/png"
    assert field(field(video, "inlineData"), "mimeType") == "video/mp4"
    assert field(video, "videoMetadata") == {"fps": 10.0}
    assert field(video, "mediaResolution") == {"level": "MEDIA_RESOLUTION_HIGH"}


async def test_without_effort_no_thinking_config_is_sent(
    fake: FakeGemini, client: genai.Client
) -> None:
    fake.add_turn(Say("ok"))
    session = GeminiSession(make_config(fake.base_url, effort=None), client=client)

    await session.stream_turn(Recorder())

    generation = fake.requests[0].body["generationConfig"]
    assert "thinkingConfig" not in generation
    assert "thinking_config" not in generation


async def test_tool_results_need_a_turn_of_this_session(
    fake: FakeGemini, client: genai.Client
) -> None:
    session = GeminiSession(make_config(fake.base_url), client=client)
    turn = ProviderTurn("", [], Usage(), native=None)

    with pytest.raises(ValueError, match="missing the model content"):
        session.append_tool_results(turn, [])


@pytest.mark.parametrize(
    ("code", "message", "expected"),
    [
        (401, None, errors.bad_key(NAME)),
        (403, None, errors.bad_key(NAME)),
        (400, "API key not valid. Please pass a valid API key.", errors.bad_key(NAME)),
        (404, None, errors.unknown_model(NAME, MODEL)),
        (429, None, errors.rate_limited(NAME)),
        (500, None, errors.upstream_failed(NAME, 500)),
        (503, None, errors.upstream_failed(NAME, 503)),
    ],
)
async def test_http_errors_become_actionable_messages_without_the_key(
    fake: FakeGemini, code: int, message: str | None, expected: ProviderError
) -> None:
    fake.add_http_error(code, message)
    session = GeminiSession(make_config(fake.base_url))

    with pytest.raises(ProviderError) as caught:
        await session.stream_turn(Recorder())
    await session.close()
    await session.close()

    assert caught.value.message == expected.message
    assert FAKE_KEY not in str(caught.value)
    assert len(fake.requests) == 1  # max_retries=0 reached the SDK
    assert fake.requests[0].headers.get("x-goog-api-key") == FAKE_KEY


async def test_a_bad_request_quotes_the_api_with_the_key_redacted(fake: FakeGemini) -> None:
    fake.add_http_error(400, f"Invalid value near {FAKE_KEY}")
    session = GeminiSession(make_config(fake.base_url))

    with pytest.raises(ProviderError) as caught:
        await session.stream_turn(Recorder())
    await session.close()

    assert caught.value.message == "Gemini rejected the request: Invalid value near *** (400)"


async def test_an_error_record_mid_stream_fails_the_turn_as_streamed(fake: FakeGemini) -> None:
    fake.add_turn(Say("Working on"), error=http_error(500, "internal"))
    session = GeminiSession(make_config(fake.base_url))
    events = Recorder()

    with pytest.raises(ProviderError) as caught:
        await session.stream_turn(events)
    await session.close()

    assert caught.value.message == errors.upstream_failed(NAME, 500).message
    assert events.events == [AssistantDelta("Working on")]


async def test_a_connection_cut_mid_stream_fails_the_turn_as_streamed(fake: FakeGemini) -> None:
    fake.add_turn(Say("Working on"), drop=True)
    session = GeminiSession(make_config(fake.base_url))

    with pytest.raises(ProviderError) as caught:
        await session.stream_turn(Recorder())
    await session.close()

    assert caught.value.message == errors.stream_failed(NAME, "the connection was lost").message


async def test_a_silent_stream_times_out(fake: FakeGemini) -> None:
    fake.add_turn(Say("Working on"), hang=True)
    session = GeminiSession(make_config(fake.base_url, timeout_s=0.3))

    with pytest.raises(ProviderError) as caught:
        await session.stream_turn(Recorder())
    await session.close()

    assert caught.value.message == errors.timed_out(NAME).message


async def test_a_refused_connection_names_the_base_url() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}"
    session = GeminiSession(make_config(base_url))

    with pytest.raises(ProviderError) as caught:
        await session.stream_turn(Recorder())
    await session.close()

    assert caught.value.message == errors.unreachable(NAME, base_url).message
    assert FAKE_KEY not in caught.value.message


async def test_cancelling_a_turn_closes_the_stream(fake: FakeGemini, client: genai.Client) -> None:
    fake.add_turn(Say("Working on it"), hang=True)
    session = GeminiSession(make_config(fake.base_url), client=client)
    events = Recorder()

    task = asyncio.create_task(session.stream_turn(events))
    await events.first.wait()
    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(fake.wait_disconnect(), timeout=10)
