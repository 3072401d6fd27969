"""OpenAI Responses API session: stateless (`store=False`), streamed, tool-calling.

The SDK sends the request (`responses.with_streaming_response.create(stream=True)`:
auth, retries, status errors) and the body is read raw: the SDK's typed event per
record cost ~50x what decoding the few fields the engine needs costs, and a
create_file streams thousands of records. Not the `responses.stream()` helper either:
its accumulation state machine raises on event-ordering quirks of OpenAI-compatible
proxies reachable through a custom base URL. The records read are in
docs/provider-wire-formats.md (OpenAI Responses).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from openai import Omit, omit
from openai.types.responses import FunctionToolParam, ResponseInputItemParam
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
    ExecutedTool,
    OnEvent,
    PromptMessage,
    ProviderError,
    ProviderName,
    ProviderSession,
    ProviderTurn,
    SessionConfig,
    StreamEvent,
    ToolCall,
    ToolSpec,
)
from services.agent.providers.clients import ClientKind, ClientPool
from services.agent.providers.errors import redact
from services.agent.providers.openai_common import (
    media_url,
    read_stream,
    result_json,
    without_none,
)
from services.agent.providers.sse import SseEvent, loads
from services.agent.providers.streaming import DeltaMerger, parse_tool_call

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


def usage_of(response: dict[str, Any]) -> Usage:
    u = response.get("usage")
    if not u:
        return Usage()
    cached = (u.get("input_tokens_details") or {}).get("cached_tokens") or 0
    return Usage.cached_within(u["input_tokens"], cached, u["output_tokens"], u["total_tokens"])


def output_text(response: dict[str, Any]) -> str:
    """The text of the response's messages (the SDK's `Response.output_text`)."""
    return "".join(
        part.get("text", "")
        for item in response.get("output") or ()
        if item.get("type") == "message"
        for part in item.get("content") or ()
        if part.get("type") == "output_text"
    )


@dataclass(slots=True)
class _FunctionCall:
    call_id: str
    name: str
    sent: list[str] = field(default_factory=list)  # argument text already forwarded


# Records that carry nothing the engine uses, skipped by their `event:` name before any
# JSON is decoded (a record without a name is decoded and judged by its `type`).
_IGNORED = frozenset(
    {
        "response.created",
        "response.in_progress",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.done",
        "response.output_item.done",
        "response.reasoning_summary_text.done",
        "response.reasoning_text.done",
    }
)


class _TurnReader:
    """One streamed response: its records become StreamEvents (a batch's consecutive
    deltas merged) and, at `response.completed`, the final response's JSON."""

    def __init__(self, name: ProviderName, api_key: str) -> None:
        self._name = name
        self._api_key = api_key
        self._out = DeltaMerger()
        self.text: list[str] = []
        self.calls: dict[str, _FunctionCall] = {}  # by output item id
        self.final: dict[str, Any] | None = None
        self.failure: ProviderError | None = None
        self.done = False
        self._saw_summary_delta = False
        self._last_part_text: str | None = None
        self._thinking_at: tuple[str, int] | None = None  # (item id, summary index) last thought

    def feed(self, batch: list[SseEvent]) -> list[StreamEvent]:
        out = self._out
        for event in batch:
            if event.name in _IGNORED:
                continue
            if event.data.startswith(b"[DONE]"):
                self.done = True
                break
            record = loads(event.data)
            kind = record.get("type")
            if kind == "response.function_call_arguments.delta":
                call = self.calls.get(record["item_id"])
                delta = record["delta"]
                if call is not None and delta:
                    call.sent.append(delta)
                    out.arguments(call.call_id, call.name, delta)
            elif kind == "response.output_text.delta":
                if delta := record["delta"]:
                    self.text.append(delta)
                    out.text(delta)
            elif self._record(kind, record):
                break
        return out.take()

    def _record(self, kind: str, record: dict[str, Any]) -> bool:
        """Every record but the two deltas of a burst; True when it ended the stream."""
        match kind:
            case "response.reasoning_summary_text.delta":
                self._saw_summary_delta = True
                self._think(record["delta"], (record["item_id"], record["summary_index"]))
            case "response.reasoning_text.delta":
                self._saw_summary_delta = True
                self._think(record["delta"], (record["item_id"], -1 - record["content_index"]))
            case "response.reasoning_summary_part.added" | "response.reasoning_summary_part.done":
                # Some servers send a summary only as whole parts: forward a part's text
                # when no delta carried it, and only once for added+done.
                part = record["part"].get("text")
                if not self._saw_summary_delta and part and part != self._last_part_text:
                    self._last_part_text = part
                    self._think(part, (record["item_id"], record["summary_index"]))
            case "response.output_item.added":
                item = record["item"]
                if item.get("type") == "function_call" and item.get("id"):
                    new = _FunctionCall(item["call_id"], item["name"])
                    self.calls[item["id"]] = new
                    self._send_args(new, item.get("arguments") or "")
            case "response.function_call_arguments.done":
                done = self.calls.get(record["item_id"])
                arguments: str = record["arguments"]
                sent = "".join(done.sent) if done else ""
                # Forward whatever the deltas missed, so fragments add up to the whole.
                if done and arguments.startswith(sent):
                    self._send_args(done, arguments[len(sent) :])
            case "error":
                detail = redact(str(record.get("message")), self._api_key)
                if code := record.get("code"):
                    detail = f"{detail} ({code})"
                self.failure = errors.stream_failed(self._name, detail)
            case "response.failed":
                err = record["response"].get("error")
                detail = f"{err['message']} ({err['code']})" if err else "the response failed"
                self.failure = errors.stream_failed(self._name, redact(detail, self._api_key))
            case "response.incomplete":
                details = record["response"].get("incomplete_details") or {}
                reason = details.get("reason") or "unknown reason"
                detail = f"the response is incomplete ({reason})"
                self.failure = errors.stream_failed(self._name, detail)
            case "response.completed":
                self.final = record["response"]
            case _:
                self.failure = openai_common.payload_error(record, self._name, self._api_key)
        return self.failure is not None

    def _think(self, text: str, where: tuple[str, int]) -> None:
        if not text:
            return
        # Summary parts arrive as separate paragraphs ("**Title**\n\n…"); without a
        # break they would run together in the UI.
        if self._thinking_at is not None and self._thinking_at != where:
            text = "\n\n" + text
        self._thinking_at = where
        self._out.thinking(text)

    def _send_args(self, call: _FunctionCall, delta: str) -> None:
        if delta:
            call.sent.append(delta)
            self._out.arguments(call.call_id, call.name, delta)


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
        config = self._config
        reader = _TurnReader(config.provider, config.api_key)
        # The SDK builds and sends the request and checks the status; the body is read
        # raw (openai_common.read_stream), as the SDK's typed events cost ~50x more.
        request = self._client.responses.with_streaming_response.create(
            model=config.api_name,
            tool_choice="auto",
            stream=True,
            store=False,
            include=["reasoning.encrypted_content"],
            max_output_tokens=config.max_output_tokens,
            reasoning=self._reasoning(),
            # The input only ever grows at its end, so each turn's request is the
            # previous one plus the new items: the key keeps them on one cache.
            prompt_cache_key=self._cache_key,
            prompt_cache_retention="24h" if config.api_name in _LONG_CACHE_MODELS else omit,
            # The SDK walks every typed parameter against its TypedDicts before sending
            # (openai._utils._transform: ~600 calls, ~1.7 ms of CPU per request with a
            # system prompt, an image and six tools; it grows with the conversation).
            # These two are JSON already and their types declare no alias or format, so
            # the walk returns them unchanged: as the body's extras they go as they are.
            extra_body={"input": self._input, "tools": self._tools},
        )
        await read_stream(request, reader, on_event, config)
        if reader.final is None:
            raise errors.stream_failed(
                config.provider, "the stream ended before the response completed"
            )
        return self._finish_turn(reader, reader.final)

    def _reasoning(self) -> Reasoning | Omit:
        if self._config.effort is None:
            return omit
        return {"effort": cast(ReasoningEffort, self._config.effort), "summary": "auto"}

    def _finish_turn(self, reader: _TurnReader, final: dict[str, Any]) -> ProviderTurn:
        output: list[dict[str, Any]] = final.get("output") or []
        calls: list[ToolCall] = [
            parse_tool_call(item["call_id"], item["name"], item["arguments"])
            for item in output
            if item.get("type") == "function_call"
        ]
        text = "".join(reader.text) or output_text(final)
        usage = usage_of(final)
        self._add_usage(usage)
        native = [without_none(item) for item in output]
        return ProviderTurn(assistant_text=text, tool_calls=calls, usage=usage, native=native)

    def append_tool_results(self, turn: ProviderTurn, executed: Sequence[ExecutedTool]) -> None:
        # Every output item goes back, reasoning included: with store=False the
        # encrypted reasoning is the only way the model keeps its chain of thought.
        items = cast(
            list[ResponseInputItemParam], replay.responses_items(turn.native or [], executed)
        )
        self._input.extend(items)
        self._input.extend(tool_output_item(e, self._detail) for e in executed)

    def append_user_turn(self, turn: ProviderTurn, message: PromptMessage) -> None:
        items = replay.responses_items(turn.native or [], [])
        self._input.extend(cast(list[ResponseInputItemParam], items))
        self._input.append(message_item(message, self._detail))


def session(config: SessionConfig, clients: ClientPool) -> ProviderSession:
    """The provider registry's builder (registry.py): a session around the pool's client."""
    kind = ClientKind("openai", OpenAIResponsesSession.new_client, openai_common.close_client)
    return clients.session(
        config, kind, lambda client: OpenAIResponsesSession(config, client=client)
    )
