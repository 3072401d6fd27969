"""An Anthropic Messages stream read from the raw HTTP body.

The SDK's typed stream builds a pydantic event per record and re-parses the tool
input after every fragment; a create_file streams thousands of fragments, so that
was most of the agent's CPU. `MessageReader` decodes each record's JSON once, keeps
only what the engine and the replay need, and turns each network read (a batch of
records) into as few stream events as it can: consecutive deltas of one kind — one
tool call's arguments, text, thinking — become one event.

The record layout it relies on is in docs/provider-wire-formats.md (Anthropic).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from services.agent.pricing import Usage
from services.agent.providers import base, errors, sse
from services.agent.providers.base import ProviderError, ToolCall
from services.agent.providers.streaming import DeltaMerger, parse_tool_call

# Usage counts a message_delta may repeat: later values are cumulative totals.
_USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


@dataclass(slots=True)
class _Block:
    start: dict[str, Any]  # the content_block of its content_block_start
    chunks: list[str] = field(default_factory=list)  # text, thinking or raw JSON input
    signature: str = ""


@dataclass(slots=True)
class MessageTurn:
    text: str
    calls: list[ToolCall]
    usage: Usage
    replay: list[dict[str, Any]]  # the assistant content as the next request carries it


class MessageReader:
    """Reads one turn's records; `feed` returns the stream events of one batch."""

    def __init__(self, config: base.SessionConfig) -> None:
        self._config = config
        self._blocks: dict[int, _Block] = {}
        self._text: list[str] = []
        self._usage: dict[str, int] = {}
        self._merger = DeltaMerger()
        self.finished = False
        # An `event: error` record: raised once the events before it are forwarded.
        self.failure: ProviderError | None = None

    def feed(self, batch: list[sse.SseEvent]) -> list[base.StreamEvent]:
        merger = self._merger
        for event in batch:
            name = event.name
            if name != "content_block_delta":
                self._record(name, event.data)
                if self.failure is not None:
                    break
                continue
            data = sse.loads(event.data)
            delta = data["delta"]
            kind = delta["type"]
            block = self._blocks[data["index"]]
            if kind == "input_json_delta":
                piece = delta["partial_json"]
                block.chunks.append(piece)
                if piece:
                    merger.arguments(block.start["id"], block.start["name"], piece)
            elif kind == "text_delta":
                piece = delta["text"]
                block.chunks.append(piece)
                if piece:
                    self._text.append(piece)
                    merger.text(piece)
            elif kind == "thinking_delta":
                piece = delta["thinking"]
                block.chunks.append(piece)
                if piece:
                    merger.thinking(piece)
            elif kind == "signature_delta":
                # Each one carries the whole signature so far, as the SDK reads it.
                block.signature = delta["signature"]
            # Other deltas (citations) carry nothing we stream or replay.
        return merger.take()

    def turn(self) -> MessageTurn:
        """The finished turn; a stream that ended before `message_stop` fails here."""
        if not self.finished:
            raise errors.stream_failed(
                self._config.provider, "the stream ended early, before the reply was complete"
            )
        calls: list[ToolCall] = []
        replay: list[dict[str, Any]] = []
        for index in sorted(self._blocks):
            block = self._blocks[index]
            start = block.start
            kind = start.get("type")
            if kind == "tool_use":
                call = _tool_call(start, block.chunks)
                calls.append(call)
                replay.append(
                    {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
                )
            elif kind == "thinking":
                thinking = start.get("thinking", "") + "".join(block.chunks)
                signature = block.signature or start.get("signature", "")
                replay.append({"type": "thinking", "thinking": thinking, "signature": signature})
            elif kind == "text":
                text = start.get("text", "") + "".join(block.chunks)
                if text:  # the API rejects empty text blocks; they carry nothing anyway
                    replay.append({"type": "text", "text": text})
            elif kind == "redacted_thinking":
                replay.append({"type": "redacted_thinking", "data": start.get("data", "")})
            else:
                # Server tool blocks and others go back as they came, their streamed
                # input (if any) parsed in.
                whole = dict(start)
                if block.chunks:
                    whole["input"] = _tool_call(start, block.chunks).arguments
                replay.append(whole)
        u = self._usage
        input_tokens = u.get("input_tokens", 0)
        output_tokens = u.get("output_tokens", 0)
        cache_read = u.get("cache_read_input_tokens", 0)
        cache_write = u.get("cache_creation_input_tokens", 0)
        usage = Usage(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
            total_tokens=input_tokens + output_tokens + cache_read + cache_write,
        )
        return MessageTurn("".join(self._text), calls, usage, replay)

    def _record(self, name: str, data: bytes) -> None:
        """Every record but a delta."""
        if name == "content_block_start":
            record = sse.loads(data)
            start = record["content_block"]
            block = self._blocks[record["index"]] = _Block(start)
            given = start.get("input")
            if start.get("type") == "tool_use" and given:
                # Arguments that arrive whole, without deltas.
                whole = json.dumps(given)
                block.chunks.append(whole)
                self._merger.arguments(start["id"], start["name"], whole)
        elif name == "message_start":
            self._take_usage(sse.loads(data)["message"].get("usage"))
        elif name == "message_delta":
            self._take_usage(sse.loads(data).get("usage"))
        elif name == "message_stop":
            self.finished = True
        elif name == "error":
            self.failure = self._stream_error(data)
        # ping, content_block_stop, and records without an `event:` name (which the
        # SDK drops too) carry nothing we use.

    def _take_usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        for key in _USAGE_KEYS:
            value = usage.get(key)
            if isinstance(value, int):
                self._usage[key] = value

    def _stream_error(self, data: bytes) -> ProviderError:
        """An `event: error` record: the accepted stream failed (e.g. overloaded_error)."""
        config = self._config
        try:
            error = sse.loads(data).get("error") or {}
            kind, message = error.get("type"), error.get("message")
            detail = f"{kind}: {message}" if kind and message else str(message or kind or "")
        except (sse.JSONDecodeError, AttributeError):
            detail = data.decode(errors="replace")
        detail = errors.redact(detail, config.api_key) or "the server reported an error"
        return errors.stream_failed(config.provider, detail)


def _tool_call(start: dict[str, Any], chunks: list[str]) -> ToolCall:
    """The call judged on its raw argument text, never on a lenient parse, so a
    cut-off file is not passed on as complete."""
    call_id, name = start.get("id", ""), start.get("name", "")
    raw = "".join(chunks)
    if not raw.strip():
        given = start.get("input")
        return ToolCall(call_id, name, given if isinstance(given, dict) else {})
    return parse_tool_call(call_id, name, raw)
