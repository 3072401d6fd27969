"""AnthropicSession's raw stream reading: bursts, split records, early ends, errors."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest

from services.agent.providers import errors
from services.agent.providers.anthropic import AnthropicSession
from services.agent.providers.base import (
    AssistantDelta,
    ExecutedTool,
    ProviderError,
    ProviderTurn,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
)
from services.agent.providers.streaming import MAX_MERGED_ARGUMENTS
from tests.fakes.anthropic_server import (
    FakeAnthropic,
    RedactedThinking,
    StreamError,
    Text,
    Thinking,
    ToolUse,
    TurnUsage,
)
from tests.fakes.sse_writes import Step, merged
from tests.providers import sessions
from tests.providers.sessions import Recorder
from tests.providers.test_anthropic import FAKE_KEY, NAME, SIGNATURE_1, make_config

PAGE = "<!DOCTYPE html><html><body>" + '<p class="row">a "quoted" row</p>\n' * 60 + "</body></html>"
CREATE_ARGS = {"path": "index.html", "content": PAGE}
ENDED_EARLY = errors.stream_failed(NAME, "the stream ended early, before the reply was complete")


fake = sessions.anthropic_fake
client = sessions.anthropic_client


@pytest.fixture
def session(fake: FakeAnthropic, client: anthropic.AsyncAnthropic) -> AnthropicSession:
    return AnthropicSession(make_config(fake.base_url), client=client)


async def test_a_burst_reaches_the_engine_as_one_event_per_run(
    fake: FakeAnthropic, session: AnthropicSession
) -> None:
    create = ToolUse.of("toolu_1", "create_file", CREATE_ARGS, size=8)
    fake.add_turn(
        Thinking.of("Plan the page first.", signature=SIGNATURE_1, size=3),
        Text.of("I'll create index.html.", size=2),
        create,
        delivery="burst",
    )
    events = Recorder()

    turn = await session.stream_turn(events)

    # The whole turn came in one read: one event for the thinking, one for the text,
    # and the tool's 8-byte fragments joined into as few as the preview allows.
    assert events.events[:2] == [
        ThinkingDelta("Plan the page first."),
        AssistantDelta("I'll create index.html."),
    ]
    arguments = events.events[2:]
    assert all(isinstance(e, ToolCallDelta) and e.call_id == "toolu_1" for e in arguments)
    assert merged(arguments) == [
        ToolCallDelta("toolu_1", "create_file", "".join(create.json_chunks))
    ]
    sizes = [len(e.arguments_delta) for e in arguments if isinstance(e, ToolCallDelta)]
    assert max(sizes) <= MAX_MERGED_ARGUMENTS
    assert len(sizes) * 10 < len(create.json_chunks)
    assert turn.tool_calls == [ToolCall("toolu_1", "create_file", CREATE_ARGS)]
    assert turn.assistant_text == "I'll create index.html."


async def test_records_split_across_reads_decode_as_whole_ones(
    fake: FakeAnthropic, session: AnthropicSession
) -> None:
    text = Text.of("Caf\u00e9 \u2014 ready \U0001f600", size=4)
    create = ToolUse.of("toolu_2", "create_file", {"path": "a.html", "content": "<p>\u00e9</p>"})
    fake.add_turn(text, create, usage=TurnUsage(70, 30, 500, 20), delivery="bytes")
    events = Recorder()

    turn = await session.stream_turn(events)

    assert merged(events.events) == [
        AssistantDelta("Caf\u00e9 \u2014 ready \U0001f600"),
        ToolCallDelta("toolu_2", "create_file", "".join(create.json_chunks)),
    ]
    assert turn.tool_calls == [
        ToolCall("toolu_2", "create_file", {"path": "a.html", "content": "<p>\u00e9</p>"})
    ]
    assert (turn.usage.input_tokens, turn.usage.cache_read_tokens) == (70, 500)
    assert (turn.usage.output_tokens, turn.usage.cache_write_tokens) == (30, 20)


@pytest.mark.parametrize("delivery", ["records", "burst"])
async def test_a_stream_cut_mid_record_fails_as_ended_early(
    fake: FakeAnthropic, session: AnthropicSession, delivery: str
) -> None:
    fake.add_turn(Text.of("Working on"), cut=True, delivery=delivery)  # type: ignore[arg-type]
    events = Recorder()

    failure = await sessions.failure_of(session, events)

    assert failure.message == ENDED_EARLY.message
    assert merged(events.events) == [AssistantDelta("Working on")]


async def test_an_error_record_in_a_burst_fails_after_the_deltas_before_it(
    fake: FakeAnthropic, session: AnthropicSession
) -> None:
    fake.add_turn(
        Text.of("Working on it", size=3),
        error=StreamError("overloaded_error", f"Overloaded for key {FAKE_KEY}"),
        delivery="burst",
    )
    events = Recorder()

    failure = await sessions.failure_of(session, events)

    assert failure.message == (
        errors.stream_failed(NAME, "overloaded_error: Overloaded for key ***").message
    )
    assert events.events == [AssistantDelta("Working on it")]


async def test_thinking_and_redacted_thinking_replay_exactly(
    fake: FakeAnthropic, session: AnthropicSession
) -> None:
    redacted = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"
    fake.add_turn(
        RedactedThinking(redacted),
        Thinking.of("Then the page.", signature=SIGNATURE_1, size=5),
        ToolUse.of("toolu_3", "create_file", {"path": "index.html", "content": "<p>x</p>"}),
        delivery="burst",
    )
    fake.add_turn(Text.of("Done."))

    turn = await session.stream_turn(Recorder())
    session.append_tool_results(turn, [ExecutedTool(turn.tool_calls[0], True, {"ok": True})])
    await session.stream_turn(Recorder())

    replayed = fake.requests[1].body["messages"][1]["content"]
    assert [{k: v for k, v in b.items() if k != "cache_control"} for b in replayed] == [
        {"type": "redacted_thinking", "data": redacted},
        {"type": "thinking", "thinking": "Then the page.", "signature": SIGNATURE_1},
        {
            "type": "tool_use",
            "id": "toolu_3",
            "name": "create_file",
            "input": {"path": "index.html", "content": "<p>x</p>"},
        },
    ]


def record(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def text_delta(text: str, index: int = 0) -> bytes:
    delta = {"type": "text_delta", "text": text}
    return record(
        "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    )


MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": []}
OPENING = record(
    "message_start",
    {
        "type": "message_start",
        "message": {**MESSAGE, "usage": {"input_tokens": 9, "output_tokens": 1}},
    },
) + record(
    "content_block_start",
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
)
CLOSING = record(
    "message_delta",
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}},
) + record("message_stop", {"type": "message_stop"})


async def scripted_turn(steps: list[Step], events: Recorder) -> ProviderTurn:
    return await sessions.scripted_turn(
        lambda origin: AnthropicSession(make_config(origin)), steps, events
    )


async def test_a_record_cut_between_two_reads_waits_for_its_rest() -> None:
    events = Recorder()
    second = text_delta("world \u00e9")
    # The rest of the cut record is written only after the client acted on the first
    # part, so it really arrives in a later read.
    steps: list[Step] = [OPENING + text_delta("Hello ") + second[:30], events.first.wait]
    turn = await scripted_turn([*steps, second[30:] + b": keep-alive\n\n" + CLOSING], events)

    assert events.events == [AssistantDelta("Hello "), AssistantDelta("world \u00e9")]
    assert (turn.assistant_text, turn.usage.input_tokens, turn.usage.output_tokens) == (
        "Hello world \u00e9",
        9,
        4,
    )


@pytest.mark.parametrize(
    "bad",
    [
        text_delta("orphan", index=7),  # a delta for a block that never started
        b"event: content_block_delta\ndata: {not json\n\n",
        record("content_block_delta", {"type": "content_block_delta", "index": 0}),
    ],
)
async def test_a_malformed_record_fails_the_turn_plainly(bad: bytes) -> None:
    with pytest.raises(ProviderError) as caught:
        await scripted_turn([OPENING + text_delta("Hi") + bad + CLOSING], Recorder())

    assert caught.value.message == (
        errors.stream_failed(NAME, "the server sent data in an unexpected shape").message
    )


async def test_pings_comments_and_nameless_records_are_skipped() -> None:
    nameless = b'data: {"type": "content_block_delta"}\n\n'
    ping = record("ping", {"type": "ping"})
    events = Recorder()

    turn = await scripted_turn(
        [OPENING + ping + nameless + b": hi\n\n" + text_delta("ok") + CLOSING], events
    )

    assert (events.events, turn.assistant_text) == ([AssistantDelta("ok")], "ok")


async def test_the_next_turn_reuses_the_connection(
    fake: FakeAnthropic, session: AnthropicSession
) -> None:
    # httpx keeps a connection only if the response was read to its end before it was
    # closed: this fails if our reader stops at `message_stop` and leaves the rest unread.
    fake.add_turn(ToolUse.of("toolu_4", "create_file", {"path": "a.html", "content": "<p>"}))
    fake.add_turn(Text.of("Done."))

    turn = await session.stream_turn(Recorder())
    session.append_tool_results(turn, [ExecutedTool(turn.tool_calls[0], True, {"ok": True})])
    await session.stream_turn(Recorder())

    first, second = fake.requests
    assert first.peer
    assert second.peer == first.peer
