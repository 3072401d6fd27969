"""A local fake of the Anthropic Messages API that speaks its streaming wire format.

Every reply follows docs/provider-wire-formats.md (Anthropic): `event:` lines
are always present (the SDK drops records without one), and each record is
written on its own so the client really receives a stream (`delivery` changes that:
"burst" writes a whole turn at once, "bytes" writes it a few bytes at a time, so
records arrive split across reads).

    fake = FakeAnthropic()
    base_url = await fake.start()          # pass as AsyncAnthropic(base_url=...)
    fake.add_turn(
        Thinking.of("Planning…", signature="sig-1"),
        Text.of("I'll create index.html."),
        ToolUse.of("toolu_1", "create_file", {"path": "index.html", "content": "…"}),
        usage=TurnUsage(input_tokens=120, output_tokens=85),
    )
    fake.add_http_error(429)               # the next request gets a 429
    ...                                    # run the client
    fake.requests[0].body                  # the JSON body of the first request
    fake.every_variant(turn_1, turn_2)     # instead: each conversation's n-th request
                                           # gets turn n, however variants interleave
    await fake.wait_disconnect()           # after cancelling a client mid-stream
    await fake.stop()

`FakeAnthropic(emulate_cache=True)` reports input, cache read and cache write tokens
as Anthropic's cache would (`prompt_cache.BreakpointCache`, at `cache_control`
breakpoints, 1024 tokens at least) in place of the scripted ones.

Replies are consumed one per request, in order. A request with nothing left to
reply gets an HTTP 500, so a test scripting too few turns fails loudly.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from aiohttp import web

from tests.fakes import serve_on_loopback
from tests.fakes.prompt_cache import BreakpointCache, anthropic_blocks

# The error `type` the real API sends with each status.
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def chunked(text: str, size: int) -> tuple[str, ...]:
    return tuple(text[i : i + size] for i in range(0, len(text), size)) or ("",)


@dataclass(frozen=True, slots=True)
class Thinking:
    chunks: tuple[str, ...]
    signature: str

    @classmethod
    def of(cls, text: str, *, signature: str, size: int = 16) -> Thinking:
        return cls(chunked(text, size), signature)


@dataclass(frozen=True, slots=True)
class RedactedThinking:
    data: str  # opaque: replayed byte for byte


@dataclass(frozen=True, slots=True)
class Text:
    chunks: tuple[str, ...]

    @classmethod
    def of(cls, text: str, size: int = 16) -> Text:
        return cls(chunked(text, size))


@dataclass(frozen=True, slots=True)
class ToolUse:
    id: str
    name: str
    json_chunks: tuple[str, ...]  # concatenated: the raw JSON input

    @classmethod
    def of(cls, call_id: str, name: str, arguments: dict[str, Any], size: int = 24) -> ToolUse:
        return cls(call_id, name, chunked(json.dumps(arguments), size))


Block = Thinking | RedactedThinking | Text | ToolUse
Delivery = Literal["records", "burst", "bytes"]


@dataclass(frozen=True, slots=True)
class TurnUsage:
    input_tokens: int = 100
    output_tokens: int = 50
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


@dataclass(frozen=True, slots=True)
class StreamError:
    """An `event: error` record sent after the turn's blocks, instead of its end."""

    type: str = "overloaded_error"
    message: str = "Overloaded"


@dataclass(frozen=True, slots=True)
class Turn:
    blocks: tuple[Block, ...]
    usage: TurnUsage = field(default_factory=TurnUsage)
    stop_reason: str | None = None  # None: tool_use when a block calls a tool, else end_turn
    error: StreamError | None = None
    hang: bool = False  # after the blocks, hold the stream open until the client leaves
    drop: bool = False  # after the blocks, cut the connection without ending the stream
    delivery: Delivery = "records"
    cut: bool = False  # end the body cleanly in the middle of the last record


@dataclass(frozen=True, slots=True)
class HttpError:
    status: int
    message: str
    type: str


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    peer: str = ""  # the client's address: the same one means a reused connection


Reply = Turn | HttpError


class FakeAnthropic:
    """See the module docstring."""

    def __init__(self, *, emulate_cache: bool = False) -> None:
        self.requests: list[RecordedRequest] = []
        self._replies: list[Reply] = []
        self._script: tuple[Turn, ...] = ()  # see every_variant
        self._cache = BreakpointCache(minimum=1024) if emulate_cache else None
        self.base_url = ""  # set by start()
        self._runner: web.AppRunner | None = None
        self._disconnected = asyncio.Event()
        self._stopping = asyncio.Event()

    async def start(self) -> str:
        # As the real API: the Messages API takes requests up to 32 MB (aiohttp's default is 1 MiB).
        app = web.Application(client_max_size=32 * 1024 * 1024)
        app.router.add_post("/v1/messages", self._messages)
        # Cancelling the handler when the client goes away is how we see disconnects.
        self._runner, self.base_url = await serve_on_loopback(app, handler_cancellation=True)
        return self.base_url

    async def stop(self) -> None:
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def add_turn(
        self,
        *blocks: Block,
        usage: TurnUsage | None = None,
        stop_reason: str | None = None,
        error: StreamError | None = None,
        hang: bool = False,
        drop: bool = False,
        delivery: Delivery = "records",
        cut: bool = False,
    ) -> None:
        self._replies.append(
            Turn(blocks, usage or TurnUsage(), stop_reason, error, hang, drop, delivery, cut)
        )

    def every_variant(self, *turns: Turn) -> None:
        """Replies by the conversation's length: its n-th request (n - 1 assistant messages
        so far) gets `turns[n - 1]`, so concurrent variants each follow the same script."""
        self._script = turns

    def add_http_error(self, status: int, message: str | None = None) -> None:
        error_type = ERROR_TYPES.get(status, "api_error")
        self._replies.append(HttpError(status, message or f"fake {error_type}", error_type))

    async def wait_disconnect(self) -> None:
        """Returns once a client has gone away in the middle of a streamed reply."""
        await self._disconnected.wait()

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        peer = str(request.transport.get_extra_info("peername")) if request.transport else ""
        self.requests.append(RecordedRequest(request.path, dict(request.headers), body, peer))
        turn = sum(1 for m in body.get("messages", ()) if m.get("role") == "assistant")
        if self._script and turn < len(self._script):
            reply: Reply = self._script[turn]
        elif not self._replies:
            return _error_response(HttpError(500, "fake: no scripted reply left", "api_error"))
        else:
            reply = self._replies.pop(0)
        if isinstance(reply, HttpError):
            return _error_response(reply)
        if self._cache is not None:
            hit = self._cache.lookup(anthropic_blocks(body))
            usage = replace(
                reply.usage,
                input_tokens=hit.input,
                cache_read_input_tokens=hit.cache_read,
                cache_creation_input_tokens=hit.cache_write,
            )
            reply = replace(reply, usage=usage)
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "request-id": "req_fake"}
        )
        await response.prepare(request)
        try:
            records = [
                f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                for name, data in _turn_events(
                    reply, str(body.get("model", "")), len(self.requests)
                )
            ]
            if reply.cut:
                records[-1] = records[-1][: len(records[-1]) // 2]
            for piece in writes(records, reply.delivery):
                await response.write(piece)
            if reply.hang:
                await self._stopping.wait()
            if reply.drop and request.transport is not None:
                request.transport.abort()
                return response
        except (asyncio.CancelledError, ConnectionResetError):
            self._disconnected.set()
            raise
        await response.write_eof()
        return response


def writes(records: list[bytes], delivery: Delivery) -> list[bytes]:
    """The pieces a reply is written in: one per record, all at once, or a few bytes each."""
    if delivery == "burst":
        return [b"".join(records)]
    if delivery == "bytes":
        whole = b"".join(records)
        return [whole[i : i + 5] for i in range(0, len(whole), 5)]
    return records


def _error_response(error: HttpError) -> web.Response:
    body = {"type": "error", "error": {"type": error.type, "message": error.message}}
    return web.json_response(body, status=error.status, headers={"request-id": "req_fake"})


def _turn_events(turn: Turn, model: str, number: int) -> list[tuple[str, dict[str, Any]]]:
    usage = turn.usage
    start_usage = {
        "input_tokens": usage.input_tokens,
        "output_tokens": 1,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
    }
    message: dict[str, Any] = {
        "id": f"msg_fake{number:04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": message}),
        ("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(turn.blocks):
        events.extend(_block_events(index, block))
    if turn.error is not None:
        error = {"type": turn.error.type, "message": turn.error.message}
        events.append(("error", {"type": "error", "error": error}))
        return events
    stop_reason = turn.stop_reason or (
        "tool_use" if any(isinstance(b, ToolUse) for b in turn.blocks) else "end_turn"
    )
    delta = {"stop_reason": stop_reason, "stop_sequence": None}
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": delta,
                "usage": {"output_tokens": usage.output_tokens},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _block_events(index: int, block: Block) -> list[tuple[str, dict[str, Any]]]:
    def delta(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return (
            "content_block_delta",
            {"type": "content_block_delta", "index": index, "delta": payload},
        )

    def start(content_block: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        payload = {"type": "content_block_start", "index": index, "content_block": content_block}
        return ("content_block_start", payload)

    events: list[tuple[str, dict[str, Any]]]
    if isinstance(block, Thinking):
        events = [start({"type": "thinking", "thinking": "", "signature": ""})]
        events += [delta({"type": "thinking_delta", "thinking": c}) for c in block.chunks]
        events.append(delta({"type": "signature_delta", "signature": block.signature}))
    elif isinstance(block, RedactedThinking):
        events = [start({"type": "redacted_thinking", "data": block.data})]
    elif isinstance(block, Text):
        events = [start({"type": "text", "text": ""})]
        events += [delta({"type": "text_delta", "text": c}) for c in block.chunks]
    else:
        events = [start({"type": "tool_use", "id": block.id, "name": block.name, "input": {}})]
        # The real API opens every tool input with an empty fragment.
        events.append(delta({"type": "input_json_delta", "partial_json": ""}))
        events += [
            delta({"type": "input_json_delta", "partial_json": c}) for c in block.json_chunks
        ]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events
