"""Helpers every provider session uses while it reads a model stream."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from services.agent.pricing import Usage, cost_usd
from services.agent.providers.base import (
    WHOLE_ARGUMENTS_CHARS,
    AssistantDelta,
    OnEvent,
    PromptMessage,
    SessionConfig,
    StreamEvent,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
)

log = logging.getLogger(__name__)

# Merged argument fragments stay within what the engine would take for arguments that
# came whole, so a burst that arrived in one read still previews as the stream it was.
MAX_MERGED_ARGUMENTS = WHOLE_ARGUMENTS_CHARS

_TEXT = "\0text"  # merge keys besides tool call ids, which are never NUL-prefixed
_THINKING = "\0thinking"


class DeltaMerger:
    """The stream events of one batch of records, as few as keep their meaning:
    consecutive deltas of one kind (text, thinking, one tool call's arguments) become one
    event, so a burst that arrived in one network read costs the engine one step."""

    __slots__ = ("_events", "_key", "_name", "_pieces", "_size")

    def __init__(self) -> None:
        self._events: list[StreamEvent] = []
        self._key = ""
        self._name = ""
        self._pieces: list[str] = []
        self._size = 0

    def text(self, piece: str) -> None:
        if self._key != _TEXT:
            self._switch(_TEXT)
        self._pieces.append(piece)

    def thinking(self, piece: str) -> None:
        if self._key != _THINKING:
            self._switch(_THINKING)
        self._pieces.append(piece)

    def arguments(self, call_id: str, name: str, piece: str) -> None:
        size = self._size + len(piece)
        if self._key != call_id or size > MAX_MERGED_ARGUMENTS:
            self._switch(call_id)
            self._name = name
            size = len(piece)
        self._pieces.append(piece)
        self._size = size

    def take(self) -> list[StreamEvent]:
        """The events so far, in stream order; the merger starts over empty."""
        self._switch("")
        events, self._events = self._events, []
        return events

    def _switch(self, key: str) -> None:
        pieces = self._pieces
        if pieces:
            text = pieces[0] if len(pieces) == 1 else "".join(pieces)
            if self._key == _TEXT:
                self._events.append(AssistantDelta(text))
            elif self._key == _THINKING:
                self._events.append(ThinkingDelta(text))
            else:
                self._events.append(ToolCallDelta(self._key, self._name, text))
            self._pieces = []
        self._key = key
        self._size = 0


@dataclass(slots=True)
class TurnProgress:
    """Whether any output of the current turn has reached the user yet: a failure after
    that is a broken stream, not an unreachable server (errors.connection_lost)."""

    streamed: bool = False

    def forward(self, on_event: OnEvent) -> OnEvent:
        """`on_event`, noting that output reached the user."""

        async def emit(event: StreamEvent) -> None:
            self.streamed = True
            await on_event(event)

        return emit


def parse_tool_call(call_id: str, name: str, raw: str) -> ToolCall:
    """A ToolCall judged on its raw argument text; text that is not a JSON object is
    kept raw, so a cut-off file is never passed on as complete."""
    try:
        arguments = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        return ToolCall(call_id, name, {}, invalid_json=raw)
    if not isinstance(arguments, dict):
        return ToolCall(call_id, name, {}, invalid_json=raw)
    return ToolCall(call_id, name, arguments)


def lineage_cache_key(messages: Sequence[PromptMessage]) -> str:
    """The prompt cache key of a variant lineage: the system prompt and the first
    user message (the history's root), hashed.

    Every variant of one generation starts from the same messages, and every update
    of one lineage replays the same root, so they share a key and with it a cache
    (OpenAI routes by key + prefix); an unrelated generation gets another key, so it
    does not crowd the same cache machine.
    """
    digest = hashlib.sha256()
    for message in messages[:2]:
        for piece in (message.role, message.text, *message.images, *message.videos):
            digest.update(piece.encode())
            digest.update(b"\0")
    return f"s2c-{digest.hexdigest()[:32]}"


class SdkSession:
    """What every SDK session keeps alike: the usage of its turns, its cost, and its
    client, closed once by `close` — only when the session made it (a client passed in
    is the caller's to close)."""

    def __init__(self, config: SessionConfig, *, owns_client: bool) -> None:
        self._config = config
        self._owns_client = owns_client
        self._usage = Usage()
        self._closed = False

    def _add_usage(self, usage: Usage) -> None:
        self._usage = self._usage + usage

    def total_cost_usd(self) -> float:
        return cost_usd(self._config.price, self._usage)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        u = self._usage
        log.info(
            "token usage provider=%s model=%s input=%d output=%d cache_read=%d "
            "cache_write=%d total=%d cost=$%.4f",
            self._config.provider.display,
            self._config.api_name,
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens,
            u.total_tokens,
            self.total_cost_usd(),
        )
        if self._owns_client:
            await self._close_client()

    async def _close_client(self) -> None:
        raise NotImplementedError
