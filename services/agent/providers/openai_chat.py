"""Chat Completions session for OpenAI-compatible local servers (Ollama, vLLM, LM Studio,
llama.cpp).

Written for the lowest common denominator of those servers: tools are not strict
(several reject `strict`), tool messages carry text only (images from tools follow in
one user message), and no `max_tokens` is sent (vLLM answers 400 when it exceeds the
context left, and every one of them defaults to "until the context is full").
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import openai
from openai import Omit, omit
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionContentPartParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
)
from openai.types.shared.reasoning_effort import ReasoningEffort

from services.agent.endpoints import PLACEHOLDER_KEY
from services.agent.pricing import Usage
from services.agent.providers import errors, openai_common, replay
from services.agent.providers.base import (
    ExecutedTool,
    OnEvent,
    PromptMessage,
    ProviderError,
    ProviderName,
    ProviderSession,
    ProviderTurn,
    SessionConfig,
    StreamEvent,
    ToolSpec,
    ToolsRefused,
)
from services.agent.providers.clients import ClientKind, ClientPool
from services.agent.providers.openai_common import media_url, read_stream, result_json
from services.agent.providers.sse import SseEvent, loads
from services.agent.providers.streaming import DeltaMerger, parse_tool_call
from services.agent.providers.tool_support import refuses_tools
from services.agent.providers.tool_tags import TextCall, ToolTagScanner

# Stream indices of the calls found as text (tool_tags.py): past any the server numbers.
_TEXT_CALLS = 1 << 20
# Non-standard delta fields carrying the model's reasoning: `reasoning_content`
# (vLLM, LM Studio, llama.cpp, DeepSeek) and `reasoning` (Ollama, newer vLLM).
# Servers that send both send the same text, so the first one present wins.
_REASONING_FIELDS = ("reasoning_content", "reasoning")


def tool_param(tool: ToolSpec) -> ChatCompletionFunctionToolParam:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.input_schema,
        },
    }


def chat_message(message: PromptMessage) -> ChatCompletionMessageParam:
    """A prompt message in Chat Completions form; images go before the text."""
    if message.role == "system":
        return {"role": "system", "content": message.text}
    if message.role == "assistant":
        return {"role": "assistant", "content": message.text}
    if not message.images:
        return {"role": "user", "content": message.text}
    parts: list[ChatCompletionContentPartParam] = [
        {"type": "image_url", "image_url": {"url": url, "detail": "high"}} for url in message.images
    ]
    parts.append({"type": "text", "text": message.text})
    return {"role": "user", "content": parts}


def tool_media_message(executed: Sequence[ExecutedTool]) -> ChatCompletionMessageParam | None:
    """One user message with the images successful tools returned, or None if none did."""
    parts: list[ChatCompletionContentPartParam] = []
    for done in executed:
        if not done.ok:
            continue
        for part in done.media:
            label = f"Image {part.display_name} from {done.call.name} (call {done.call.id}):"
            parts.append({"type": "text", "text": label})
            parts.append(
                {"type": "image_url", "image_url": {"url": media_url(part), "detail": "high"}}
            )
    if not parts:
        return None
    return {"role": "user", "content": parts}


def usage_of(usage: dict[str, Any] | None) -> Usage:
    if not usage:
        return Usage()
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    return Usage.cached_within(
        usage["prompt_tokens"], cached, usage["completion_tokens"], usage["total_tokens"]
    )


@dataclass(slots=True)
class _PendingCall:
    call_id: str
    name: str
    arguments: list[str] = field(default_factory=list)


class _TurnReader:
    """One streamed completion: its chunks become StreamEvents (a batch's consecutive
    deltas merged); tool-call fragments are joined by their stream index."""

    def __init__(
        self, name: ProviderName, api_key: str, *, max_calls: int, tool_tags: bool = False
    ) -> None:
        self._name = name
        self._api_key = api_key
        self._out = DeltaMerger()
        # With tools offered, calls the server left in the text as tags are calls too.
        self._tags = ToolTagScanner() if tool_tags else None
        self.text: list[str] = []
        self.calls: dict[int, _PendingCall] = {}  # by stream index
        # Calls past `max_calls` are dropped as they come (a model that writes a thousand
        # tags would otherwise replay them all in every later request): the stream
        # indices of the server's own, and how many written as tags.
        self._max_calls = max_calls
        self._dropped_indices: set[int] = set()
        self._dropped_tags = 0
        self.usage: dict[str, Any] | None = None
        self.finished = False
        self.failure: ProviderError | None = None
        self.done = False

    def feed(self, batch: list[SseEvent]) -> list[StreamEvent]:
        out = self._out
        for event in batch:
            if event.data.startswith(b"[DONE]"):
                self.done = True
                break
            chunk = loads(event.data)
            if chunk.get("error"):
                self.failure = openai_common.payload_error(chunk, self._name, self._api_key)
                break
            if (usage := chunk.get("usage")) is not None:
                self.usage = usage
            for choice in (chunk.get("choices") or ())[:1]:
                self.finished = self.finished or choice.get("finish_reason") is not None
                delta = choice.get("delta") or {}
                for name in _REASONING_FIELDS:
                    thought = delta.get(name)
                    if isinstance(thought, str) and thought:
                        out.thinking(thought)
                        break
                if content := delta.get("content"):
                    if self._tags is None:
                        self.text.append(content)
                        out.text(content)
                    else:
                        self._take(self._tags.feed(content))
                for fragment in delta.get("tool_calls") or ():
                    pending = self._pending(fragment)
                    if pending is None:
                        continue
                    piece = (fragment.get("function") or {}).get("arguments")
                    if piece:
                        pending.arguments.append(piece)
                        out.arguments(pending.call_id, pending.name, piece)
        return out.take()

    @property
    def dropped(self) -> int:
        """The calls past `max_calls` that were not kept."""
        return len(self._dropped_indices) + self._dropped_tags

    def end(self) -> list[StreamEvent]:
        """The stream ended: what the tag scanner still held, as events."""
        if self._tags is not None:
            self._take(self._tags.end())
        return self._out.take()

    def _take(self, items: list[str | TextCall]) -> None:
        for item in items:
            if isinstance(item, str):
                if item:
                    self.text.append(item)
                    self._out.text(item)
                continue
            if len(self.calls) >= self._max_calls:
                self._dropped_tags += 1
                continue
            # After the server's own calls, in the order written.
            index = _TEXT_CALLS + len(self.calls)
            call_id = f"call_text_{len(self.calls)}_{secrets.token_hex(4)}"
            self.calls[index] = _PendingCall(call_id, item.name, [item.arguments])
            self._out.arguments(call_id, item.name, item.arguments)

    def _pending(self, fragment: dict[str, Any]) -> _PendingCall | None:
        """The call `fragment` is part of; None: one past `max_calls`, dropped."""
        index = fragment["index"]
        fn = fragment.get("function") or {}
        pending = self.calls.get(index)
        if pending is None:
            if index in self._dropped_indices or len(self.calls) >= self._max_calls:
                self._dropped_indices.add(index)
                return None
            # The first fragment names the call; a server that omits the id still
            # needs one to pair the result with the call.
            call_id = fragment.get("id") or f"call_{index}_{secrets.token_hex(4)}"
            pending = self.calls[index] = _PendingCall(call_id, fn.get("name") or "")
        elif not pending.name and fn.get("name"):
            pending.name = fn["name"]
        return pending


class OpenAIChatSession(openai_common.OpenAISession):
    """One conversation with a model behind an OpenAI-compatible Chat Completions API."""

    keyless_placeholder = PLACEHOLDER_KEY

    def _start(self, config: SessionConfig) -> None:
        self._tools = [tool_param(t) for t in config.tools]
        self._messages: list[ChatCompletionMessageParam] = [
            chat_message(m) for m in config.messages
        ]

    async def stream_turn(self, on_event: OnEvent) -> ProviderTurn:
        config = self._config
        reader = _TurnReader(
            config.provider,
            config.api_key,
            tool_tags=bool(self._tools),
            max_calls=config.max_tool_calls,
        )
        # The SDK builds and sends the request and checks the status; the body is read
        # raw (openai_common.read_stream), as the SDK's typed chunks cost ~50x more.
        request = self._client.chat.completions.with_streaming_response.create(
            model=config.api_name,
            # Sent past the SDK's param transform, as in openai_responses.py: the
            # conversation and the tool schemas are JSON already, and the transform's
            # walk of them costs ~1.7 ms per request. The SDK's signature wants
            # `messages`; the extra of that name is what the body carries.
            messages=[],
            extra_body={"messages": self._messages, "tools": self._tools or omit},
            stream=True,
            stream_options={"include_usage": True},
            reasoning_effort=self._effort(),
            # OpenAI's Chat Completions takes the same key as Responses; the local
            # servers (vLLM, Ollama, llama.cpp, LM Studio) ignore unknown fields and
            # cache by prefix on their own.
            prompt_cache_key=self._cache_key,
        )
        try:
            await read_stream(request, reader, on_event, config)
        except ProviderError as exc:
            if self._tools and (refused := _tools_refused(exc, config)) is not None:
                raise refused from exc
            raise
        for event in reader.end():
            await on_event(event)
        if not reader.finished:
            raise errors.stream_failed(
                config.provider, "the stream ended before the answer was complete"
            )
        return self._finish_turn(reader)

    def _effort(self) -> ReasoningEffort | Omit:
        if self._config.effort is None:
            return omit
        return cast(ReasoningEffort, self._config.effort)

    def _finish_turn(self, reader: _TurnReader) -> ProviderTurn:
        pending = [reader.calls[i] for i in sorted(reader.calls)]
        calls = [parse_tool_call(p.call_id, p.name, "".join(p.arguments)) for p in pending]
        text = "".join(reader.text)
        usage = usage_of(reader.usage)
        self._add_usage(usage)
        native: ChatCompletionAssistantMessageParam = {"role": "assistant", "content": text}
        if pending:
            native["tool_calls"] = [_call_param(p) for p in pending]
        return ProviderTurn(text, calls, usage, native, dropped_calls=reader.dropped)

    def append_tool_results(self, turn: ProviderTurn, executed: Sequence[ExecutedTool]) -> None:
        self._messages.append(
            cast(ChatCompletionAssistantMessageParam, replay.chat_message(turn.native, executed))
        )
        for done in executed:
            self._messages.append(
                {"role": "tool", "tool_call_id": done.call.id, "content": result_json(done.result)}
            )
        # Most local servers accept only text in tool messages, so the images
        # travel in a user message right after the results.
        media = tool_media_message(executed)
        if media is not None:
            self._messages.append(media)

    def append_user_turn(self, turn: ProviderTurn, message: PromptMessage) -> None:
        self._messages.append(
            cast(ChatCompletionAssistantMessageParam, replay.chat_message(turn.native, []))
        )
        self._messages.append(chat_message(message))


def _tools_refused(exc: ProviderError, config: SessionConfig) -> ToolsRefused | None:
    """A ToolsRefused for an error status saying the request's tools cannot be taken."""
    cause = exc.__cause__
    if not isinstance(cause, openai.APIStatusError):
        return None
    detail = openai_common.error_detail(cause)
    if not refuses_tools(cause.status_code, detail):
        return None
    return ToolsRefused(
        f"{config.provider.display} takes no tools for {config.api_name}: "
        f"{errors.redact(detail, config.api_key)} ({cause.status_code})"
    )


def _call_param(pending: _PendingCall) -> ChatCompletionMessageFunctionToolCallParam:
    return {
        "id": pending.call_id,
        "type": "function",
        "function": {"name": pending.name, "arguments": "".join(pending.arguments)},
    }


def session(config: SessionConfig, clients: ClientPool) -> ProviderSession:
    """The provider registry's builder (registry.py): a session around the pool's client."""
    kind = ClientKind("openai-compatible", OpenAIChatSession.new_client, openai_common.close_client)
    return clients.session(config, kind, lambda client: OpenAIChatSession(config, client=client))
