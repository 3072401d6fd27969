"""The raw SSE reader the provider sessions share."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import pytest

from services.agent.providers.sse import SseDecoder, SseEvent, event_batches, loads

STREAM = (
    b"event: response.created\n"
    b'data: {"type":"response.created"}\n'
    b"\n"
    b": keep-alive comment\n"
    b"\n"
    b"event: response.function_call_arguments.delta\r\n"
    b'data: {"type":"d","delta":"<p>\\u00e9\\n"}\r\n'
    b"\r\n"
    b"data: first line\n"
    b"data:second line\n"
    b"id: 7\n"
    b"retry: 100\n"
    b"\n"
    b"data: [DONE]\n\n"
)
EXPECTED = [
    SseEvent("response.created", b'{"type":"response.created"}'),
    SseEvent("response.function_call_arguments.delta", b'{"type":"d","delta":"<p>\\u00e9\\n"}'),
    SseEvent("", b"first line\nsecond line"),
    SseEvent("", b"[DONE]"),
]


def test_whole_stream_in_one_read() -> None:
    assert SseDecoder().feed(STREAM) == EXPECTED


@pytest.mark.parametrize("seed", range(20))
def test_any_split_into_reads_gives_the_same_events(seed: int) -> None:
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(STREAM)), rng.randint(1, 40)))
    pieces = [STREAM[a:b] for a, b in zip([0, *cuts], [*cuts, len(STREAM)], strict=True)]
    decoder = SseDecoder()
    assert [e for piece in pieces for e in decoder.feed(piece)] == EXPECTED


def test_bytewise_reads() -> None:
    decoder = SseDecoder()
    assert [e for i in range(len(STREAM)) for e in decoder.feed(STREAM[i : i + 1])] == EXPECTED


def test_event_cut_off_by_the_end_is_not_dispatched() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b'data: {"a":1}\n\ndata: {"b":') == [SseEvent("", b'{"a":1}')]


async def test_batches_follow_reads() -> None:
    async def reads() -> AsyncIterator[bytes]:
        yield b'data: {"n":1}\n\ndata: {"n":2}\n\ndata: {"n"'
        yield b":3}\n"
        yield b"\n"

    batches = [[loads(e.data)["n"] for e in batch] async for batch in event_batches(reads())]
    assert batches == [[1, 2], [3]]


def test_loads_decodes_escapes() -> None:
    assert loads(EXPECTED[1].data)["delta"] == "<p>\u00e9\n"
