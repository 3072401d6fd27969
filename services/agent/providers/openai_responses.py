"""OpenAI Responses API session: stateless (`store=False`), streamed, tool-calling.

Why `responses.create(stream=True)` and not the `responses.stream()` helper: we only
need the raw events plus the final `Response` that `response.completed` carries, and
we handle `error` / `response.failed` events ourselves. The helper adds its own
accumulation state machine that raises on event-ordering quirks of OpenAI-compatible
proxies reachable through a custom base URL, without giving us anything we use.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from openai import Omit, omit
from openai.types.responses import (
    FunctionToolParam,
    Response,
    ResponseInputItemParam,
    ResponseStreamEvent,
)
from openai.types.responses.image_detail import ImageDetail
from openai.types.responses.response_function_call_output_item_list_param import (
    ResponseFunctionCallOutputItemParam,
)
from openai.types.responses.response_input_message_content_list_param import (
    ResponseInputContentParam,
)
from openai.types.shared_params import Reasoning
from openai.types.shared_params.reasoning_effort import ReasoningEffort

from services.agent.pricing import Usage
from services.agent.providers import errors, openai_common, replay
from services.agent.providers.base import (
    AssistantDelta,
    ExecutedTool,
    OnEvent,
    PromptMessage,
    ProviderName,
    ProviderTurn,
    SessionConfig,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
    ToolSpec,
)
from services.agent.providers.errors import redact
from services.agent.providers.openai_common import media_url, provider_errors, result_json
from services.agent.providers.streaming import TurnProgress, parse_tool_call

# Upstream sends these models images at full resolution; the rest get "high".
_ORIGINAL_DETAIL_MODELS = frozenset({"gpt-5.5", "gpt-5.6-sol", "gpt-5.6-terra"})
# Upstream asks for 24-hour prompt caching for this model only.
_LONG_CACHE_MODELS = frozenset({"gpt-5.4-2026-03-05"})


def image_detail(api_name: str) -> ImageDetail:
    return "original" if api_name in _ORIGINAL_DETAIL_MODELS else "high"


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str) and kind != "null":
        return {**schema, "type": [kind, "null"]}
    if isinstance(kind, list):
        return schema if "null" in kind else {**schema, "type": [*kind, "null"]}
    if "anyOf" in schema:
        return {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
    if "enum" in schema and None not in schema["enum"]:
        return {**schema, "enum": [*schema["enum"], None]}
    return schema


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` rewritten for OpenAI strict mode, at every depth.

    Strict mode wants every property listed in `required` and no additional
    properties. Properties the schema left optional become nullable instead, so the
    model can still say "not given" (with an explicit null); required ones keep
    their type, so strict decoding still guarantees them.
    """
    out = copy.deepcopy(schema)
    if not out:
        return {"type": "object", "properties": {}, "additionalProperties": False, "required": []}
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(out.get(key), list):
            out[key] = [strict_schema(s) if isinstance(s, dict) else s for s in out[key]]
    for key in ("$defs", "definitions"):
        if isinstance(out.get(key), dict):
            out[key] = {k: strict_schema(v) for k, v in out[key].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = strict_schema(out["items"])
    if out.get("type") == "object" or "properties" in out:
        props: dict[str, Any] = out.get("properties") or {}
        required = set(out.get("required") or ())
        out["properties"] = {
            name: strict_schema(sub) if name in required else _nullable(strict_schema(sub))
            for name, sub in props.items()
        }
        out["required"] = list(props)
        out["additionalProperties"] = False
    return out


def tool_param(tool: ToolSpec) -> FunctionToolParam:
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": strict_schema(tool.input_schema),
        "strict": True,
    }


def message_item(message: PromptMessage, detail: ImageDetail) -> ResponseInputItemParam:
    """A prompt message as a Responses input item; images go before the text."""
    if message.role != "user" or not message.images:
        return {"role": message.role, "content": message.text}
    content: list[ResponseInputContentParam] = [
        {"type": "input_image", "image_url": url, "detail": detail} for url in message.images
    ]
    content.append({"type": "input_text", "text": message.text})
    return {"role": "user", "content": content}


def tool_output_item(executed: ExecutedTool, detail: ImageDetail) -> ResponseInputItemParam:
    text = result_json(executed.result)
    if not (executed.ok and executed.media):
        return {"type": "function_call_output", "call_id": executed.call.id, "output": text}
    parts: list[ResponseFunctionCallOutputItemParam] = [{"type": "input_text", "text": text}]
    parts.extend(
        {"type": "input_image", "image_url": media_url(part), "detail": detail}
        for part in executed.media
    )
    return {"type": "function_call_output", "call_id": executed.call.id, "output": parts}


def usage_of(response: Response) -> Usage:
    u = response.usage
    if u is None:
        return Usage()
    cached = u.input_tokens_details.cached_tokens if u.input_tokens_details else 0
    return Usage.cached_within(u.input_tokens, cached, u.output_tokens, u.total_tokens)


@dataclass
class _FunctionCall:
    call_id: str
    name: str
    sent: str = ""  # argument text already forwarded as deltas


@dataclass
class _TurnParser:
    """Turns one streamed response into StreamEvents and, at the end, a Response."""

    emit: OnEvent
    name: ProviderName
    api_key: str
    text: list[str] = field(default_factory=list)
    calls: dict[str, _FunctionCall] = field(default_factory=dict)  # by output item id
    final: Response | None = None
    _saw_summary_delta: bool = False
    _last_part_text: str | None = None
    _thinking_at: tuple[str, int] | None = None  # (item id, summary index) last thought

    async def _think(self, text: str, where: tuple[str, int]) -> None:
        if not text:
            return
        # Summary parts arrive as separate paragraphs ("**Title**\n\n…"); without a
        # break they would run together in the UI.
        if self._thinking_at is not None and self._thinking_at != where:
            text = "\n\n" + text
        self._thinking_at = where
        await self.emit(ThinkingDelta(text))

    async def _send_args(self, call: _FunctionCall, delta: str) -> None:
        if delta:
            call.sent += delta
            await self.emit(ToolCallDelta(call.call_id, call.name, delta))

    async def handle(self, event: ResponseStreamEvent) -> None:
        match event.type:
            case "response.output_text.delta":
                self.text.append(event.delta)
                await self.emit(AssistantDelta(event.delta))
            case "response.reasoning_summary_text.delta":
                self._saw_summary_delta = True
                await self._think(event.delta, (event.item_id, event.summary_index))
            case "response.reasoning_text.delta":
                self._saw_summary_delta = True
                await self._think(event.delta, (event.item_id, -1 - event.content_index))
            case "response.reasoning_summary_part.added" | "response.reasoning_summary_part.done":
                # Some servers send a summary only as whole parts: forward a part's text
                # when no delta carried it, and only once for added+done.
                part = event.part.text
                if not self._saw_summary_delta and part and part != self._last_part_text:
                    self._last_part_text = part
                    await self._think(part, (event.item_id, event.summary_index))
            case "response.output_item.added":
                item = event.item
                if item.type == "function_call" and item.id:
                    new = _FunctionCall(item.call_id, item.name)
                    self.calls[item.id] = new
                    await self._send_args(new, item.arguments)
            case "response.function_call_arguments.delta":
                if known := self.calls.get(event.item_id):
                    await self._send_args(known, event.delta)
            case "response.function_call_arguments.done":
                done = self.calls.get(event.item_id)
                # Forward whatever the deltas missed, so fragments add up to the whole.
                if done and event.arguments.startswith(done.sent):
                    await self._send_args(done, event.arguments[len(done.sent) :])
            case "error":
                detail = redact(event.message, self.api_key)
                if event.code:
                    detail = f"{detail} ({event.code})"
                raise errors.stream_failed(self.name, detail)
            case "response.failed":
                err = event.response.error
                detail = f"{err.message} ({err.code})" if err else "the response failed"
                raise errors.stream_failed(self.name, redact(detail, self.api_key))
            case "response.incomplete":
                details = event.response.incomplete_details
                reason = details.reason if details and details.reason else "unknown reason"
                raise errors.stream_failed(self.name, f"the response is incomplete ({reason})")
            case "response.completed":
                self.final = event.response
            case _:
                pass


class OpenAIResponsesSession(openai_common.OpenAISession):
    """One conversation with an OpenAI model through the Responses API.

    The conversation lives here, not on OpenAI's servers: every turn resends the
    accumulated input items, including the encrypted reasoning of earlier turns.
    """

    def _start(self, config: SessionConfig) -> None:
        self._detail = image_detail(config.api_name)
        self._tools = [tool_param(t) for t in config.tools]
        self._input: list[ResponseInputItemParam] = [
            message_item(m, self._detail) for m in config.messages
        ]

    async def stream_turn(self, on_event: OnEvent) -> ProviderTurn:
        progress = TurnProgress()
        config = self._config
        parser = _TurnParser(progress.forward(on_event), config.provider, config.api_key)
        with provider_errors(config, progress):
            stream = await self._client.responses.create(
                model=self._config.api_name,
                input=self._input,
                tools=self._tools,
                tool_choice="auto",
                stream=True,
                store=False,
                include=["reasoning.encrypted_content"],
                max_output_tokens=self._config.max_output_tokens,
                reasoning=self._reasoning(),
                # The input only ever grows at its end, so each turn's request is the
                # previous one plus the new items: the key keeps them on one cache.
                prompt_cache_key=self._cache_key,
                prompt_cache_retention=(
                    "24h" if self._config.api_name in _LONG_CACHE_MODELS else omit
                ),
            )
            # Leaving this block by any path, cancellation included, closes the
            # HTTP response so the upstream generation stops too.
            async with stream:
                async for event in stream:
                    await parser.handle(event)
        if parser.final is None:
            raise errors.stream_failed(
                config.provider, "the stream ended before the response completed"
            )
        return self._finish_turn(parser, parser.final)

    def _reasoning(self) -> Reasoning | Omit:
        if self._config.effort is None:
            return omit
        return {"effort": cast(ReasoningEffort, self._config.effort), "summary": "auto"}

    def _finish_turn(self, parser: _TurnParser, final: Response) -> ProviderTurn:
        calls: list[ToolCall] = [
            parse_tool_call(item.call_id, item.name, item.arguments)
            for item in final.output
            if item.type == "function_call"
        ]
        text = "".join(parser.text) or final.output_text
        usage = usage_of(final)
        self._add_usage(usage)
        native = [item.model_dump(mode="json", exclude_none=True) for item in final.output]
        return ProviderTurn(assistant_text=text, tool_calls=calls, usage=usage, native=native)

    def append_tool_results(self, turn: ProviderTurn, executed: Sequence[ExecutedTool]) -> None:
        # Every output item goes back, reasoning included: with store=False the
        # encrypted reasoning is the only way the model keeps its chain of thought.
        items = cast(
            list[ResponseInputItemParam], replay.responses_items(turn.native or [], executed)
        )
        self._input.extend(items)
        self._input.extend(tool_output_item(e, self._detail) for e in executed)
