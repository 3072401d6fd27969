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
from typing import cast

from openai import Omit, omit
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionChunk,
    ChatCompletionContentPartParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
)
from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall
from openai.types.completion_usage import CompletionUsage
from openai.types.shared.reasoning_effort import ReasoningEffort

from services.agent.pricing import Usage
from services.agent.providers import errors, openai_common, replay
from services.agent.providers.base import (
    AssistantDelta,
    ExecutedTool,
    OnEvent,
    PromptMessage,
    ProviderTurn,
    SessionConfig,
    ThinkingDelta,
    ToolCallDelta,
    ToolSpec,
)
from services.agent.providers.openai_common import media_url, provider_errors, result_json
from services.agent.providers.streaming import TurnProgress, parse_tool_call

# The SDK refuses to start without a key; local servers ignore whatever it sends.
PLACEHOLDER_KEY = "not-needed"
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


def usage_of(usage: CompletionUsage | None) -> Usage:
    if usage is None:
        return Usage()
    details = usage.prompt_tokens_details
    cached = details.cached_tokens if details else 0
    return Usage.cached_within(
        usage.prompt_tokens, cached, usage.completion_tokens, usage.total_tokens
    )


@dataclass
class _PendingCall:
    call_id: str
    name: str
    arguments: list[str] = field(default_factory=list)


@dataclass
class _TurnParser:
    emit: OnEvent
    text: list[str] = field(default_factory=list)
    calls: dict[int, _PendingCall] = field(default_factory=dict)  # by stream index
    usage: CompletionUsage | None = None
    finished: bool = False

    def _pending(self, fragment: ChoiceDeltaToolCall) -> _PendingCall:
        index = fragment.index
        if index not in self.calls:
            fn = fragment.function
            # The first fragment names the call; a server that omits the id still
            # needs one to pair the result with the call.
            call_id = fragment.id or f"call_{index}_{secrets.token_hex(4)}"
            self.calls[index] = _PendingCall(call_id, (fn.name if fn else None) or "")
        pending = self.calls[index]
        if not pending.name and fragment.function and fragment.function.name:
            pending.name = fragment.function.name
        return pending

    async def handle(self, chunk: ChatCompletionChunk) -> None:
        if chunk.usage is not None:
            self.usage = chunk.usage
        for choice in chunk.choices[:1]:
            self.finished = self.finished or choice.finish_reason is not None
            delta = choice.delta
            extra = delta.model_extra or {}
            for name in _REASONING_FIELDS:
                thought = extra.get(name)
                if isinstance(thought, str) and thought:
                    await self.emit(ThinkingDelta(thought))
                    break
            if delta.content:
                self.text.append(delta.content)
                await self.emit(AssistantDelta(delta.content))
            for fragment in delta.tool_calls or ():
                pending = self._pending(fragment)
                piece = fragment.function.arguments if fragment.function else None
                if piece:
                    pending.arguments.append(piece)
                    await self.emit(ToolCallDelta(pending.call_id, pending.name, piece))


class OpenAIChatSession(openai_common.OpenAISession):
    """One conversation with a model behind an OpenAI-compatible Chat Completions API."""

    keyless_placeholder = PLACEHOLDER_KEY

    def _start(self, config: SessionConfig) -> None:
        self._tools = [tool_param(t) for t in config.tools]
        self._messages: list[ChatCompletionMessageParam] = [
            chat_message(m) for m in config.messages
        ]

    async def stream_turn(self, on_event: OnEvent) -> ProviderTurn:
        progress = TurnProgress()
        parser = _TurnParser(progress.forward(on_event))
        with provider_errors(self._config, progress):
            stream = await self._client.chat.completions.create(
                model=self._config.api_name,
                messages=self._messages,
                tools=self._tools or omit,
                stream=True,
                stream_options={"include_usage": True},
                reasoning_effort=self._effort(),
                # OpenAI's Chat Completions takes the same key as Responses; the local
                # servers (vLLM, Ollama, llama.cpp, LM Studio) ignore unknown fields and
                # cache by prefix on their own.
                prompt_cache_key=self._cache_key,
            )
            # Leaving this block by any path, cancellation included, closes the
            # HTTP response so the server stops generating.
            async with stream:
                async for chunk in stream:
                    await parser.handle(chunk)
        if not parser.finished:
            raise errors.stream_failed(
                self._config.provider, "the stream ended before the answer was complete"
            )
        return self._finish_turn(parser)

    def _effort(self) -> ReasoningEffort | Omit:
        if self._config.effort is None:
            return omit
        return cast(ReasoningEffort, self._config.effort)

    def _finish_turn(self, parser: _TurnParser) -> ProviderTurn:
        pending = [parser.calls[i] for i in sorted(parser.calls)]
        calls = [parse_tool_call(p.call_id, p.name, "".join(p.arguments)) for p in pending]
        text = "".join(parser.text)
        usage = usage_of(parser.usage)
        self._add_usage(usage)
        native: ChatCompletionAssistantMessageParam = {"role": "assistant", "content": text}
        if pending:
            native["tool_calls"] = [_call_param(p) for p in pending]
        return ProviderTurn(assistant_text=text, tool_calls=calls, usage=usage, native=native)

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


def _call_param(pending: _PendingCall) -> ChatCompletionMessageFunctionToolCallParam:
    return {
        "id": pending.call_id,
        "type": "function",
        "function": {"name": pending.name, "arguments": "".join(pending.arguments)},
    }
