"""OpenAIChatSession (local OpenAI-compatible servers) against the fake, via the real SDK."""

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

from services.agent.domain import GenerationRequest
from services.agent.models import resolve
from services.agent.planning import Planner
from services.agent.pricing import Usage, cost_usd
from services.agent.providers import errors, registry
from services.agent.providers.base import (
    AssistantDelta,
    ExecutedTool,
    MediaPart,
    PromptMessage,
    ProviderError,
    ProviderSession,
    SessionConfig,
    StreamEvent,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
    ToolSpec,
    ToolsRefused,
)
from services.agent.providers.clients import PooledSession
from services.agent.providers.factory import ProviderSessions, SessionRequest
from services.agent.providers.openai_chat import OpenAIChatSession
from services.agent.settings import AgentSettings
from services.common.credentials import Credentials, Endpoint
from tests.fakes.openai_server import (
    ErrorReply,
    FakeOpenAI,
    FunctionCall,
    Pause,
    Reasoning,
    Text,
    TokenUsage,
    chat_turn,
    http_error,
)
from tests.fakes.sse_writes import merged
from tests.providers import sessions
from tests.providers.sessions import Recorder

KEY = "sk-local-DO-NOT-LEAK-51c0de"
PNG = b"\x89PNG\r\n\x1a\nfake-png-bytes"
SHOT_URL = "https://cdn.example.com/shot.png"
USER_IMAGE = "data:image/jpeg;base64,aGVsbG8="

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
        "properties": {"old_text": {"type": "string"}, "new_text": {"type": "string"}},
        "required": ["old_text", "new_text"],
    },
)

NAME = registry.get("openai-compatible").name
SCREENSHOT = ToolSpec("screenshot_preview", "Screenshot the page", {"type": "object"})


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
        model_id="qwen3-coder (local)",
        api_name="qwen3-coder",
        effort=None,
        api_key=KEY,
        base_url=base_url,
        messages=(
            PromptMessage("system", "You build web pages."),
            PromptMessage("user", "Make this page", images=(USER_IMAGE,)),
        ),
        tools=(CREATE_FILE, EDIT_FILE, SCREENSHOT),
        max_retries=0,
    )
    return replace(base, **changes)


def args_of(events: list[StreamEvent], call_id: str) -> str:
    return "".join(
        e.arguments_delta for e in events if isinstance(e, ToolCallDelta) and e.call_id == call_id
    )


async def test_tool_loop_streams_events_and_continues(
    fake: FakeOpenAI, client: AsyncOpenAI
) -> None:
    create_args = json.dumps({"path": "index.html", "content": "<html><body>Hi</body></html>"})
    edit_args = json.dumps({"old_text": "Hi", "new_text": "Hello"})
    fake.add_chat(
        chat_turn(
            [
                Reasoning([["The user wants ", "a page."]]),
                Text(["I'll create ", "index.html."]),
                FunctionCall("call_1", "create_file", create_args, pieces=4),
            ],
            usage=TokenUsage(input=900, cached=100, output=250),
        ),
        chat_turn(
            [
                FunctionCall("call_2", "edit_file", edit_args, pieces=3),
                FunctionCall("call_3", "screenshot_preview", "{}", pieces=1),
            ]
        ),
        chat_turn([Text(["All ", "done."])], usage=TokenUsage(input=1500, output=5)),
    )
    session = OpenAIChatSession(config(fake.base_url), client=client)
    seen = Recorder()

    turn1 = await session.stream_turn(seen)
    events = seen.drain()
    # However the chunks fell into reads (a read's consecutive deltas come merged).
    assert merged(events) == [
        ThinkingDelta("The user wants a page."),
        AssistantDelta("I'll create index.html."),
        ToolCallDelta("call_1", "create_file", create_args),
    ]
    assert turn1.assistant_text == "I'll create index.html."
    assert turn1.tool_calls == [ToolCall("call_1", "create_file", json.loads(create_args))]
    assert turn1.usage == Usage(800, 250, 100, 0, 1150)
    session.append_tool_results(turn1, [ExecutedTool(turn1.tool_calls[0], True, {"ok": True})])

    turn2 = await session.stream_turn(seen)
    events = seen.drain()
    assert args_of(events, "call_2") == edit_args
    assert args_of(events, "call_3") == "{}"
    assert [c.id for c in turn2.tool_calls] == ["call_2", "call_3"]
    assert turn2.tool_calls[0].arguments == {"old_text": "Hi", "new_text": "Hello"}
    assert turn2.usage == Usage()  # the server sent no usage chunk
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
    assert session.total_cost_usd() == 0.0  # an unpriced local model

    first, second, third = (r.json for r in fake.requests)
    assert all(r.headers["Authorization"] == f"Bearer {KEY}" for r in fake.requests)
    assert first["model"] == "qwen3-coder"
    assert first["stream"] is True
    assert first["stream_options"] == {"include_usage": True}
    assert "max_tokens" not in first
    assert "reasoning_effort" not in first
    assert first["tools"][0] == {
        "type": "function",
        "function": {
            "name": "create_file",
            "description": "Create a file",
            "parameters": CREATE_FILE.input_schema,
        },
    }
    assert first["messages"] == [
        {"role": "system", "content": "You build web pages."},
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": USER_IMAGE, "detail": "high"}},
                {"type": "text", "text": "Make this page"},
            ],
        },
    ]
    assert second["messages"][2:] == [
        {
            "role": "assistant",
            "content": "I'll create index.html.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "create_file", "arguments": create_args},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": json.dumps({"ok": True})},
    ]
    assistant, *rest = third["messages"][4:]
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_2", "call_3"]
    assert [c["function"]["arguments"] for c in assistant["tool_calls"]] == [edit_args, "{}"]
    png_url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert rest == [
        {
            "role": "tool",
            "tool_call_id": "call_2",
            "content": json.dumps({"ok": True, "replaced": 1}),
        },
        {"role": "tool", "tool_call_id": "call_3", "content": json.dumps({"ok": True})},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Image shot.png from screenshot_preview (call call_3):"},
                {"type": "image_url", "image_url": {"url": png_url, "detail": "high"}},
                {"type": "text", "text": "Image web.png from screenshot_preview (call call_3):"},
                {"type": "image_url", "image_url": {"url": SHOT_URL, "detail": "high"}},
            ],
        },
    ]


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_reasoning_extensions_become_thinking(
    fake: FakeOpenAI, client: AsyncOpenAI, field: str
) -> None:
    fake.add_chat(chat_turn([Reasoning([["Hmm, ", "a page."]], chat_field=field), Text(["Hi"])]))
    session = OpenAIChatSession(config(fake.base_url), client=client)
    seen = Recorder()
    await session.stream_turn(seen)
    assert merged(seen.events) == [ThinkingDelta("Hmm, a page."), AssistantDelta("Hi")]


async def test_effort_cost_and_keyless_server(fake: FakeOpenAI) -> None:
    fake.add_chat(chat_turn([Text(["ok"])], usage=TokenUsage(input=1000, cached=400, output=100)))
    # No key: a local server. The session makes its own client from the config.
    cfg = config(
        fake.base_url,
        api_key="",
        api_name="gpt-5.4-mini",
        effort="low",
        price=registry.PRICES["gpt-5.4-mini"],
    )
    session = OpenAIChatSession(cfg)
    turn = await session.stream_turn(Recorder())
    await session.close()
    await session.close()
    request = fake.requests[0]
    assert request.headers["Authorization"] == "Bearer not-needed"
    assert request.json["reasoning_effort"] == "low"
    assert turn.usage == Usage(600, 100, 400, 0, 1100)
    assert session.total_cost_usd() == pytest.approx(
        cost_usd(registry.PRICES["gpt-5.4-mini"], turn.usage)
    )
    assert session.total_cost_usd() > 0


async def test_invalid_arguments_and_failed_tool_media(
    fake: FakeOpenAI, client: AsyncOpenAI
) -> None:
    fake.add_chat(
        chat_turn([FunctionCall("call_7", "create_file", '{"path": "a.ht')]),
        chat_turn([Text(["ok"])]),
    )
    session = OpenAIChatSession(config(fake.base_url), client=client)
    turn = await session.stream_turn(Recorder())
    assert turn.tool_calls == [ToolCall("call_7", "create_file", {}, invalid_json='{"path": "a.ht')]
    image = (MediaPart("x.png", "image/png", url=SHOT_URL),)
    session.append_tool_results(
        turn, [ExecutedTool(turn.tool_calls[0], False, {"error": "bad"}, image)]
    )
    await session.stream_turn(Recorder())
    # A failed tool's images are not sent: the last message is the tool result.
    assert fake.requests[1].json["messages"][-1] == {
        "role": "tool", "tool_call_id": "call_7", "content": json.dumps({"error": "bad"}),
    }  # fmt: skip


ERROR_CASES = [
    (http_error(401), errors.bad_key(NAME)),
    (http_error(404), errors.unknown_model(NAME, "qwen3-coder")),
    (http_error(429), errors.rate_limited(NAME)),
    (http_error(500), errors.upstream_failed(NAME, 500)),
    (
        http_error(400, f"prompt is longer than the context (key {KEY})"),
        errors.bad_request(NAME, "prompt is longer than the context (key ***) (400)"),
    ),
]


# The servers' own refusals of a request with tools, in their own body shapes
# (docs/models.md): Ollama, vLLM (both of its error shapes), llama.cpp (a 500).
TOOL_REFUSALS = [
    http_error(
        400, "registry.ollama.ai/library/gemma3:4b does not support tools", type="api_error"
    ),
    ErrorReply(
        400,
        {
            "object": "error",
            "message": '"auto" tool choice requires --enable-auto-tool-choice and '
            "--tool-call-parser to be set",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
    ),
    ErrorReply(
        400,
        {
            "error": {
                "message": '"auto" tool choice requires --enable-auto-tool-choice and '
                "--tool-call-parser to be set",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            }
        },
    ),
    ErrorReply(
        500,
        {
            "error": {
                "code": 500,
                "message": "tools param requires --jinja flag",
                "type": "server_error",
            }
        },
    ),
]


@pytest.mark.parametrize("reply", TOOL_REFUSALS)
async def test_a_server_refusing_tools_says_so_as_tools_refused(
    fake: FakeOpenAI, client: AsyncOpenAI, reply: Any
) -> None:
    fake.add_chat(reply)
    session = OpenAIChatSession(config(fake.base_url), client=client)
    seen = Recorder()
    with pytest.raises(ToolsRefused) as caught:
        await session.stream_turn(seen)
    assert caught.value.message.startswith(
        "OpenAI-compatible server takes no tools for qwen3-coder:"
    )
    assert seen.events == []


async def test_the_same_words_without_tools_sent_are_an_ordinary_error(
    fake: FakeOpenAI, client: AsyncOpenAI
) -> None:
    fake.add_chat(TOOL_REFUSALS[0])
    session = OpenAIChatSession(config(fake.base_url, tools=()), client=client)
    with pytest.raises(ProviderError) as caught:
        await session.stream_turn(Recorder())
    assert not isinstance(caught.value, ToolsRefused)


@pytest.mark.parametrize(("reply", "expected"), ERROR_CASES)
async def test_http_errors_become_provider_errors(
    fake: FakeOpenAI, client: AsyncOpenAI, reply: Any, expected: ProviderError
) -> None:
    fake.add_chat(reply)
    session = OpenAIChatSession(config(fake.base_url), client=client)
    seen = Recorder()
    with pytest.raises(ProviderError) as caught:
        await session.stream_turn(seen)
    assert caught.value.message == expected.message
    assert KEY not in str(caught.value)
    assert seen.events == []


@pytest.mark.parametrize(
    ("end", "detail"),
    [
        ("error", f"Overloaded, key {KEY}"),
        ("none", "the stream ended before the answer was complete"),
    ],
)
async def test_stream_failures_after_output(
    fake: FakeOpenAI, client: AsyncOpenAI, end: Any, detail: str
) -> None:
    fake.add_chat(chat_turn([Text(["Half a sent", "ence"])], end=end, error_message=detail))
    session = OpenAIChatSession(config(fake.base_url), client=client)
    seen = Recorder()
    with pytest.raises(ProviderError) as caught:
        await session.stream_turn(seen)
    expected = errors.stream_failed(NAME, detail.replace(KEY, "***"))
    assert caught.value.message == expected.message
    assert KEY not in caught.value.message
    assert merged(seen.events) == [AssistantDelta("Half a sentence")]


async def test_connection_refused(closed_port: int) -> None:
    base_url = f"http://127.0.0.1:{closed_port}/v1"
    session = OpenAIChatSession(config(base_url))
    with pytest.raises(ProviderError) as caught:
        await session.stream_turn(Recorder())
    await session.close()
    assert caught.value.message == errors.unreachable(NAME, base_url).message
    assert KEY not in caught.value.message


async def test_cancelling_a_turn_closes_the_upstream_stream(
    fake: FakeOpenAI, client: AsyncOpenAI
) -> None:
    fake.add_chat(chat_turn([Text(["Hel"]), Pause(), Text(["lo"])]))
    session = OpenAIChatSession(config(fake.base_url), client=client)
    seen = Recorder()
    task = asyncio.create_task(session.stream_turn(seen))
    await asyncio.wait_for(seen.first.wait(), 5)
    await asyncio.wait_for(fake.stream_paused.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(fake.client_disconnected.wait(), 5)
    assert seen.events == [AssistantDelta("Hel")]


async def test_released_pause_finishes_the_turn(fake: FakeOpenAI, client: AsyncOpenAI) -> None:
    fake.add_chat(chat_turn([Text(["Hel"]), Pause(), Text(["lo"])]))
    session = OpenAIChatSession(config(fake.base_url), client=client)
    task = asyncio.create_task(session.stream_turn(Recorder()))
    await asyncio.wait_for(fake.stream_paused.wait(), 5)
    fake.release()
    turn = await asyncio.wait_for(task, 5)
    assert turn.assistant_text == "Hello"
    assert fake.disconnects == 0


def through_registry(settings: AgentSettings, model: str = "local:qwen3-coder") -> ProviderSession:
    """The session the agent would run: model id → registry entry → factory → session."""
    request = GenerationRequest(generation_id="g-registry")
    return ProviderSessions(settings)(
        SessionRequest(
            resolve(model),
            variant_index=0,
            messages=config("").messages,
            tools=(CREATE_FILE,),
            request=request,
            credentials=Planner(settings).plan(request).credentials,
        )
    )


async def test_the_registry_entry_builds_the_session_for_the_local_server(
    fake: FakeOpenAI,
) -> None:
    fake.add_chat(chat_turn([Text(["Hello from the local server"])]))
    # The operator's S2C_LOCAL_BASE_URL wins over OPENAI_BASE_URL, and the OpenAI key
    # stays with OpenAI: the local server gets none.
    env = Credentials.of(openai=Endpoint(KEY, "http://127.0.0.1:9/v1"))
    settings = AgentSettings(credentials=env, local_base_url=fake.base_url, provider_max_retries=0)
    session = through_registry(settings)
    assert isinstance(session, PooledSession)
    assert isinstance(session.inner, OpenAIChatSession)
    seen = Recorder()
    await session.stream_turn(seen)
    await session.close()
    assert seen.events == [AssistantDelta("Hello from the local server")]
    [request] = fake.requests
    assert request.json["model"] == "qwen3-coder"
    assert request.headers["Authorization"] == "Bearer not-needed"


async def test_the_local_entry_falls_back_to_the_openai_base_url_and_needs_one(
    fake: FakeOpenAI,
) -> None:
    fake.add_chat(chat_turn([Text(["ok"])]))
    env = Credentials.of(openai=Endpoint("", fake.base_url))
    session = through_registry(AgentSettings(credentials=env, provider_max_retries=0))
    await session.stream_turn(Recorder())
    await session.close()
    assert fake.requests[0].headers["Authorization"] == "Bearer not-needed"

    with pytest.raises(ProviderError) as refused:
        through_registry(AgentSettings())
    assert "local:qwen3-coder needs an OpenAI-compatible server" in str(refused.value)
    assert "S2C_LOCAL_BASE_URL" in str(refused.value)
