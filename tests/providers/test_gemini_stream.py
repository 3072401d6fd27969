"""GeminiSession's raw stream reading, and the adapter under google-genai it relies on."""

from __future__ import annotations

import inspect
import json
from importlib.metadata import version

import httpx2
import pytest
from google import genai
from google.genai import _common, models, types
from google.genai._api_client import BaseApiClient, HttpResponse

from services.agent.providers import errors
from services.agent.providers.base import (
    AssistantDelta,
    ExecutedTool,
    ProviderError,
    ProviderTurn,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
)
from services.agent.providers.gemini import GeminiSession, _generation_config
from services.agent.providers.gemini_stream import open_stream
from tests.fakes.gemini_server import Call, FakeGemini, Say, Thought, TurnUsage, http_error
from tests.fakes.sse_writes import Step, merged
from tests.providers import sessions
from tests.providers.sessions import Recorder, gemini_sdk
from tests.providers.test_gemini import (
    FAKE_KEY,
    MODEL,
    NAME,
    SIGNATURE_1,
    decode,
    make_config,
    signature,
)

ENDED_EARLY = errors.stream_failed(NAME, "the stream ended early, before the reply was complete")
CREATE_ARGS = {"path": "index.html", "content": "<html><body>\u00e9</body></html>"}


fake = sessions.gemini_fake
client = sessions.gemini_client


def test_the_private_sdk_parts_the_adapter_names_are_there() -> None:
    """Fails loudly when a google-genai upgrade may have moved what gemini_stream relies
    on: re-read `AsyncModels._generate_content_stream` of the new version, compare
    `open_stream` with it, then move the pin."""
    assert version("google-genai") == "3.6.1"
    assert callable(models._GenerateContentParameters_to_mldev)
    assert issubclass(types._GenerateContentParameters, _common.BaseModel)
    assert callable(_common.convert_to_dict)
    assert callable(_common.encode_unserializable_types)
    build = inspect.signature(BaseApiClient._build_request).parameters
    assert list(build) == ["self", "http_method", "path", "request_dict", "http_options"]
    send = inspect.signature(BaseApiClient._async_request).parameters
    assert list(send) == ["self", "http_request", "http_options", "stream"]
    assert "response_stream" in HttpResponse(headers={}).__dict__
    assert callable(types.Part._from_response)
    assert isinstance(gemini_sdk("http://127.0.0.1:9")._api_client, BaseApiClient)


async def test_the_adapter_sends_the_request_the_sdk_method_sends(
    fake: FakeGemini, client: genai.Client
) -> None:
    config = make_config(fake.base_url)
    generation = _generation_config(config, "You build web pages.")
    contents = [
        types.Content(role="user", parts=[types.Part(text="A landing page")]),
        types.Content(
            role="model",
            parts=[types.Part(text="Thinking", thought=True, thought_signature=SIGNATURE_1)],
        ),
    ]
    fake.add_turn(Say("ok"))
    fake.add_turn(Say("ok"))

    async for _ in await client.aio.models.generate_content_stream(
        model=MODEL, contents=contents, config=generation
    ):
        pass
    body = await open_stream(client, MODEL, contents, generation)
    async for _ in body.chunks():
        pass
    await body.close()

    public, ours = fake.requests
    assert ours.path == public.path
    assert ours.body == public.body
    for header in ("x-goog-api-key", "Content-Type", "x-goog-api-client", "User-Agent"):
        assert ours.headers.get(header) == public.headers.get(header)


async def test_a_burst_reaches_the_engine_as_one_event_per_run(
    fake: FakeGemini, client: genai.Client
) -> None:
    fake.add_turn(
        Thought("**Plan**\n"),
        Thought("A page."),
        Say("I'll create "),
        Say("index.html."),
        Call("create_file", CREATE_ARGS, id="call-1", signature=SIGNATURE_1),
        Say("Then I check it."),
        delivery="burst",
    )
    fake.add_turn(Say("Done."))
    session = GeminiSession(make_config(fake.base_url), client=client)
    events = Recorder()

    turn = await session.stream_turn(events)
    session.append_tool_results(turn, [ExecutedTool(turn.tool_calls[0], True, {"ok": True})])
    await session.stream_turn(Recorder())

    assert events.events == [
        ThinkingDelta("**Plan**\nA page."),
        AssistantDelta("I'll create index.html."),
        ToolCallDelta("call-1", "create_file", json.dumps(CREATE_ARGS)),
        AssistantDelta("Then I check it."),
    ]
    assert turn.tool_calls == [ToolCall("call-1", "create_file", CREATE_ARGS)]
    assert turn.assistant_text == "I'll create index.html.Then I check it."
    # The replay still carries every part as it streamed, the signature on its part.
    parts = fake.requests[1].body["contents"][1]["parts"]
    assert [p.get("text") for p in parts] == [
        "**Plan**\n",
        "A page.",
        "I'll create ",
        "index.html.",
        None,
        "Then I check it.",
    ]
    assert signature(parts[4]) == SIGNATURE_1


async def test_records_split_across_reads_decode_as_whole_ones(
    fake: FakeGemini, client: genai.Client
) -> None:
    fake.add_turn(
        Say("Caf\u00e9 \u2014 "),
        Say("ready \U0001f600"),
        usage=TurnUsage(prompt=400, candidates=20, thoughts=5, cached=100),
        delivery="bytes",
    )
    session = GeminiSession(make_config(fake.base_url), client=client)
    events = Recorder()

    turn = await session.stream_turn(events)

    assert merged(events.events) == [AssistantDelta("Caf\u00e9 \u2014 ready \U0001f600")]
    assert (turn.usage.input_tokens, turn.usage.cache_read_tokens) == (300, 100)
    assert turn.usage.output_tokens == 25


@pytest.mark.parametrize("delivery", ["records", "burst"])
async def test_a_stream_cut_mid_record_fails_as_ended_early(
    fake: FakeGemini, client: genai.Client, delivery: str
) -> None:
    fake.add_turn(Say("Working "), Say("on it"), cut=True, delivery=delivery)  # type: ignore[arg-type]
    session = GeminiSession(make_config(fake.base_url), client=client)
    events = Recorder()

    failure = await sessions.failure_of(session, events)

    assert failure.message == ENDED_EARLY.message
    assert merged(events.events) == [AssistantDelta("Working ")]


async def test_an_error_record_in_a_burst_fails_after_the_deltas_before_it(
    fake: FakeGemini, client: genai.Client
) -> None:
    fake.add_turn(
        Say("Working "),
        Say("on it"),
        error=http_error(400, f"Invalid value near {FAKE_KEY}"),
        delivery="burst",
    )
    session = GeminiSession(make_config(fake.base_url), client=client)
    events = Recorder()

    failure = await sessions.failure_of(session, events)

    assert failure.message == "Gemini rejected the request: Invalid value near *** (400)"
    assert events.events == [AssistantDelta("Working on it")]


async def test_the_httpx_transport_streams_too(fake: FakeGemini) -> None:
    async with httpx2.AsyncClient() as http:
        client = gemini_sdk(fake.base_url, httpx_async_client=http)
        fake.add_turn(Thought("Plan."), Say("Hello "), Say("there."), delivery="burst")
        session = GeminiSession(make_config(fake.base_url), client=client)
        events = Recorder()

        turn = await session.stream_turn(events)

    assert events.events == [ThinkingDelta("Plan."), AssistantDelta("Hello there.")]
    assert turn.assistant_text == "Hello there."


async def test_a_reply_cut_at_the_request_limit_continues_in_a_new_request(
    fake: FakeGemini, client: genai.Client
) -> None:
    token = b"\xfb\xff-resume-here"
    fake.add_turn(
        Thought("Plan."),
        Say("First half, "),
        usage=TurnUsage(prompt=400, candidates=100),
        continuation=token,
    )
    fake.add_turn(
        Say("second half."),
        Call("create_file", CREATE_ARGS, id="call-9"),
        usage=TurnUsage(prompt=450, candidates=60),
    )
    session = GeminiSession(make_config(fake.base_url), client=client)
    events = Recorder()

    turn = await session.stream_turn(events)

    assert merged(events.events) == [
        ThinkingDelta("Plan."),
        AssistantDelta("First half, second half."),
        ToolCallDelta("call-9", "create_file", json.dumps(CREATE_ARGS)),
    ]
    assert turn.tool_calls == [ToolCall("call-9", "create_file", CREATE_ARGS)]
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (850, 160)  # both hops
    first, second = (r.body for r in fake.requests)
    assert "continuationToken" not in first
    assert decode(second.pop("continuationToken")) == token
    assert second == first  # the same request otherwise


def chunk(text: str, *, finish: str | None = None) -> bytes:
    candidate: dict[str, object] = {"content": {"parts": [{"text": text}], "role": "model"}}
    if finish:
        candidate["finishReason"] = finish
    return f"data: {json.dumps({'candidates': [candidate]})}\r\n\r\n".encode()


async def scripted_turn(steps: list[Step], events: Recorder) -> ProviderTurn:
    return await sessions.scripted_turn(
        lambda origin: GeminiSession(make_config(origin)), steps, events
    )


async def test_a_record_cut_between_two_reads_waits_for_its_rest() -> None:
    events = Recorder()
    second = chunk("world \u00e9", finish="STOP")
    # The rest of the cut record is written only after the client acted on the first
    # part, so it really arrives in a later read.
    steps: list[Step] = [chunk("Hello ") + second[:30], events.first.wait, second[30:]]
    turn = await scripted_turn(steps, events)

    assert events.events == [AssistantDelta("Hello "), AssistantDelta("world \u00e9")]
    assert turn.assistant_text == "Hello world \u00e9"


@pytest.mark.parametrize(
    "bad",
    [
        b"data: {not json\r\n\r\n",
        b'data: {"candidates": [{"content": {"parts": [{"functionCall": {"args": 3}}]}}]}\r\n\r\n',
        b'data: {"candidates": "none"}\r\n\r\n',
    ],
)
async def test_a_malformed_record_fails_the_turn_plainly(bad: bytes) -> None:
    with pytest.raises(ProviderError) as caught:
        await scripted_turn([chunk("Hi") + bad + chunk("!", finish="STOP")], Recorder())

    assert caught.value.message == (
        errors.stream_failed(NAME, "the server sent an unreadable response").message
    )
