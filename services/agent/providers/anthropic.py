"""Anthropic Messages API session (streaming, tools, adaptive thinking).

Unlike upstream, the continuation replays the assistant content exactly as it
came back — thinking blocks with their signatures included — because the API
requires those blocks to accompany tool results while thinking is on.

Images are kept as original bytes in the conversation and encoded when a
request is built: how far they must shrink depends on how many images the
whole request holds (see `anthropic_images`), which grows with every turn.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, cast

import anthropic
import httpx2
from anthropic import AsyncAPIResponse
from anthropic.types import (
    CacheControlEphemeralParam,
    MessageParam,
    OutputConfigParam,
    TextBlockParam,
    ToolParam,
)

from services.agent.providers import base, errors, raw_stream, replay, sse
from services.agent.providers.anthropic_images import (
    EncodedImage,
    fit_image,
    max_dimension_for,
)
from services.agent.providers.anthropic_stream import MessageReader
from services.agent.providers.base import ExecutedTool, ProviderError, ProviderTurn
from services.agent.providers.clients import ClientKind, ClientPool
from services.agent.providers.streaming import SdkSession, TurnProgress
from services.common.images import ImageDecoder, ImageRefused
from services.common.input_images import InputImage
from services.common.uploads import parse_data_url

logger = logging.getLogger(__name__)


Block = dict[str, Any]


@dataclass(slots=True)
class _LocalImage:
    """Image bytes held in the conversation; encoded per request size limit, then cached
    (a refusal too: its reason takes the image's place)."""

    data: bytes
    media_type: str
    _encoded: dict[int, EncodedImage | str] = field(default_factory=dict)

    def block(self, max_dimension: int, decoder: ImageDecoder) -> Block:
        if max_dimension not in self._encoded:
            try:
                self._encoded[max_dimension] = fit_image(
                    self.data, self.media_type, decoder, max_dimension=max_dimension
                )
            except ImageRefused as exc:
                logger.warning("an image was left out of the request: %s", exc.message)
                self._encoded[max_dimension] = f"(An image was omitted here: {exc.message}.)"
        encoded = self._encoded[max_dimension]
        if isinstance(encoded, str):
            return {"type": "text", "text": encoded}
        source = {"type": "base64", "media_type": encoded.media_type, "data": encoded.data}
        return {"type": "image", "source": source}


# A conversation item: a JSON-ready block, or an image still to be encoded.
Item = Block | _LocalImage


def new_client(config: base.SessionConfig) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        api_key=config.api_key,
        base_url=config.base_url,
        max_retries=config.max_retries,
        timeout=config.request_timeout_s,
        # As for OpenAI: the SDK's aiohttp transport reads a stream for less (read_stack.py).
        http_client=anthropic.DefaultAioHttpClient(),
    )


async def close_client(client: anthropic.AsyncAnthropic) -> None:
    await client.close()


class AnthropicSession(SdkSession):
    """One variant's conversation with a Claude model."""

    def __init__(
        self,
        config: base.SessionConfig,
        *,
        client: anthropic.AsyncAnthropic | None = None,
        prompt_caching: bool = True,
    ) -> None:
        """`prompt_caching=False` sends no cache breakpoints (the cost bench's baseline)."""
        super().__init__(config, owns_client=client is None)
        self._caching = prompt_caching
        self._client = client or new_client(config)
        self._system = ""
        self._messages: list[dict[str, Any]] = []
        prompt = list(config.messages)
        if prompt and prompt[0].role == "system":
            self._system = prompt.pop(0).text
        for message in prompt:
            converted = _convert_prompt_message(message, config.prepared)
            if converted is not None:
                self._messages.append(converted)
        self._tools = [
            _tool_param(spec.name, spec.description, spec.input_schema) for spec in config.tools
        ]

    async def stream_turn(self, on_event: base.OnEvent) -> ProviderTurn:
        # Encoding large images is CPU work; keep it off the event loop.
        messages = await asyncio.to_thread(self._render_messages)
        progress = TurnProgress()
        emit = progress.forward(on_event)
        reader = MessageReader(self._config)
        mapped = errors.MappedErrors(lambda exc: _provider_error(exc, self._config, progress))
        async with AsyncExitStack() as stack:
            # The SDK sends the request, retries and raises on an error status; the
            # body it hands back is read raw (anthropic_stream).
            with mapped:
                response = await stack.enter_async_context(self._open_stream(messages))
            await raw_stream.forward(response.iter_bytes(), reader, emit, mapped)
        turn = reader.turn()
        self._add_usage(turn.usage)
        return ProviderTurn(turn.text, turn.calls, turn.usage, native=turn.replay)

    def append_tool_results(self, turn: ProviderTurn, executed: Sequence[ExecutedTool]) -> None:
        if not isinstance(turn.native, list) or not executed:
            raise ValueError("append_tool_results needs a tool-calling turn from this session")
        self._messages.append(
            {"role": "assistant", "content": replay.anthropic_blocks(turn.native, executed)}
        )
        self._messages.append({"role": "user", "content": [_tool_result(t) for t in executed]})

    def append_user_turn(self, turn: ProviderTurn, message: base.PromptMessage) -> None:
        blocks = replay.anthropic_blocks(turn.native if isinstance(turn.native, list) else [], [])
        # An empty assistant message is refused: a turn that said nothing is left out.
        if blocks:
            self._messages.append({"role": "assistant", "content": blocks})
        converted = _convert_prompt_message(message, self._config.prepared)
        if converted is not None:
            self._messages.append(converted)

    async def _close_client(self) -> None:
        await close_client(self._client)

    def _open_stream(
        self, messages: list[MessageParam]
    ) -> AbstractAsyncContextManager[AsyncAPIResponse[Any]]:
        config = self._config
        extra_body: dict[str, Any] | None = None
        thinking: anthropic.types.ThinkingConfigParam | anthropic.Omit = anthropic.omit
        output_config: OutputConfigParam | anthropic.Omit = anthropic.omit
        if config.effort:
            thinking = {"type": "adaptive"}
            output_config = cast(OutputConfigParam, {"effort": config.effort})
        else:
            # Deterministic output, as upstream asks for. This SDK version has no typed
            # `temperature` parameter any more, so it rides in the body as an extra.
            extra_body = {"temperature": 0.0}
        system: str | list[TextBlockParam] | anthropic.Omit = self._system or anthropic.omit
        if self._caching:
            system, messages = _with_breakpoints(self._system, messages)
        return self._client.messages.with_streaming_response.create(
            stream=True,
            model=config.api_name,
            max_tokens=config.max_output_tokens,
            system=system,
            messages=messages,
            tools=self._tools or anthropic.omit,
            thinking=thinking,
            output_config=output_config,
            extra_body=extra_body,
        )

    def _render_messages(self) -> list[MessageParam]:
        max_dimension = max_dimension_for(_count_images(self._messages))
        decoder = self._config.images
        rendered = [
            {"role": m["role"], "content": _render(m["content"], max_dimension, decoder)}
            if isinstance(m["content"], list)
            else m
            for m in self._messages
        ]
        return cast(list[MessageParam], rendered)


_EPHEMERAL: CacheControlEphemeralParam = {"type": "ephemeral"}
# Blocks the API refuses a cache_control on.
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})


def _with_breakpoints(
    system: str, messages: list[MessageParam]
) -> tuple[list[TextBlockParam] | anthropic.Omit, list[MessageParam]]:
    """Cache breakpoints on the stable prefix and on the conversation tail (3 of the 4
    the API allows).

    The prefix is tools then system, so one breakpoint on the system block covers
    both. The tail breakpoint lets the next turn of this variant read everything this
    one sent; the one on the user message before the tail is where the next update
    of the lineage finds its history cached, since its tail (the current file) moves.
    """
    marked: list[TextBlockParam] | anthropic.Omit = anthropic.omit
    if system:
        marked = [{"type": "text", "text": system, "cache_control": _EPHEMERAL}]
    out = list(messages)
    if not out:
        return marked, out
    marks = [len(out) - 1]
    earlier = next((i for i in range(len(out) - 2, -1, -1) if out[i]["role"] == "user"), None)
    if earlier is not None:
        marks.append(earlier)
    for index in marks:
        out[index] = _mark_last_block(out[index])
    return marked, out


def _mark_last_block(message: MessageParam) -> MessageParam:
    content = message["content"]
    blocks: list[Any] = (
        [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    )
    last = blocks[-1] if blocks else None
    if not isinstance(last, dict) or last.get("type") in _UNMARKABLE:
        return message
    # A copy: the blocks are shared with the conversation kept for later turns.
    blocks[-1] = {**last, "cache_control": _EPHEMERAL}
    return cast(MessageParam, {**message, "content": blocks})


def _provider_error(
    exc: Exception, config: base.SessionConfig, progress: TurnProgress
) -> ProviderError | None:
    """The one place where SDK and transport exceptions become user-facing errors.

    Order matters: a timeout is a connection error, and every HTTP error is a status error.
    """
    name = config.provider
    if isinstance(exc, anthropic.APITimeoutError | httpx2.TimeoutException):
        return errors.timed_out(name)
    # Once the body streams, transport failures surface from the SDK's HTTP library
    # unwrapped.
    if isinstance(exc, anthropic.APIConnectionError | httpx2.TransportError):
        return errors.connection_lost(config, progress.streamed)
    if isinstance(exc, anthropic.APIStatusError):
        return errors.status_error(config, exc.status_code, _status_detail(exc))
    if isinstance(exc, anthropic.AnthropicError):
        return errors.stream_failed(name, type(exc).__name__)
    if isinstance(exc, sse.JSONDecodeError | KeyError | TypeError | AttributeError):
        return errors.stream_failed(name, "the server sent data in an unexpected shape")
    return None


def _status_detail(exc: anthropic.APIStatusError) -> str:
    if exc.api_message:
        return f"{exc.type}: {exc.api_message}" if exc.type else exc.api_message
    return f"HTTP {exc.status_code}"


def _tool_param(name: str, description: str, schema: dict[str, Any]) -> ToolParam:
    # Eager streaming sends arguments as they are generated, so the create_file
    # preview starts at once instead of after the whole file.
    return ToolParam(
        name=name, description=description, input_schema=schema, eager_input_streaming=True
    )


def _convert_prompt_message(
    message: base.PromptMessage, prepared: Mapping[str, InputImage]
) -> dict[str, Any] | None:
    role = "assistant" if message.role == "assistant" else "user"
    if role == "assistant" or not message.images:
        return {"role": role, "content": message.text} if message.text else None
    content: list[Item] = []
    for url in message.images:
        image = _image_item(url, prepared)
        if image is not None:
            content.append(image)
    if message.videos:
        logger.info("Anthropic takes no video input; %d video(s) left out", len(message.videos))
    if message.text:
        content.append({"type": "text", "text": message.text})
    return {"role": role, "content": content} if content else None


def _image_item(url: str, prepared: Mapping[str, InputImage]) -> Item | None:
    image = prepared.get(url)  # the generation's own, parsed once by its plan
    if image is not None:
        return _LocalImage(image.data, image.mime_type)
    if url.startswith("data:"):
        try:
            parsed = parse_data_url(url)
        except ValueError:
            logger.warning("skipping an input image whose data URL does not decode")
            return None
        return _LocalImage(parsed.data, parsed.content_type)
    return {"type": "image", "source": {"type": "url", "url": url}}


def _tool_result(executed: ExecutedTool) -> Block:
    result_json = json.dumps(executed.result)
    block: Block = {"type": "tool_result", "tool_use_id": executed.call.id}
    if not executed.ok or not executed.media:
        # The API refuses images in a result flagged as an error, so errors stay text.
        block["content"] = result_json
        block["is_error"] = not executed.ok
        return block
    content: list[Item] = [{"type": "text", "text": result_json}]
    for part in executed.media:
        content.append({"type": "text", "text": part.display_name})
        if part.url is not None:
            content.append({"type": "image", "source": {"type": "url", "url": part.url}})
        elif part.data is not None:
            content.append(_LocalImage(part.data, part.mime_type))
    block["content"] = content
    block["is_error"] = False
    return block


def _count_images(items: Sequence[Any]) -> int:
    count = 0
    for item in items:
        if isinstance(item, _LocalImage):
            count += 1
        elif isinstance(item, dict):
            if item.get("type") == "image":
                count += 1
            nested = item.get("content")
            if isinstance(nested, list):
                count += _count_images(nested)
    return count


def _render(items: Sequence[Any], max_dimension: int, decoder: ImageDecoder) -> list[Any]:
    rendered: list[Any] = []
    for item in items:
        if isinstance(item, _LocalImage):
            rendered.append(item.block(max_dimension, decoder))
        elif isinstance(item, dict) and isinstance(item.get("content"), list):
            content = _render(item["content"], max_dimension, decoder)
            rendered.append({**item, "content": content})
        else:
            rendered.append(item)
    return rendered


def session(config: base.SessionConfig, clients: ClientPool) -> base.ProviderSession:
    """The provider registry's builder (registry.py): a session around the pool's client."""
    kind = ClientKind("anthropic", new_client, close_client)
    return clients.session(config, kind, lambda client: AnthropicSession(config, client=client))
