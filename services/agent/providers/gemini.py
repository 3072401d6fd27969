"""Google Gemini session (google-genai, Developer API, streaming).

The continuation sends back the model's content exactly as streamed: every
part, with its thought signature bytes untouched, which Gemini requires to
keep reasoning across tool calls. Tool results go back as one user content of
`function_response` parts, with tool images attached natively.

Tool images given by URL must be downloaded first, which needs the event
loop, so `append_tool_results` only queues the results and the next
`stream_turn` builds them into the conversation.
"""

from __future__ import annotations

import asyncio
import json
import logging
import mimetypes
import secrets
from collections.abc import AsyncGenerator, Iterator, Sequence
from contextlib import aclosing, contextmanager
from dataclasses import dataclass, field
from typing import cast

import aiohttp
import pydantic
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from services.agent.pricing import Usage
from services.agent.providers import base, errors, replay
from services.agent.providers.anthropic_images import parse_data_url
from services.agent.providers.base import ExecutedTool, MediaPart, ProviderTurn, ToolCall
from services.agent.providers.streaming import SdkSession, TurnProgress

logger = logging.getLogger(__name__)

DOWNLOAD_TIMEOUT_S = 30.0
MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024
_VIDEO_FPS = 10.0

# Magic numbers of the media a browser may upload as application/octet-stream.
_SIGNATURES: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "image/png"),
    (b"\xff\xd8\xff", 0, "image/jpeg"),
    (b"GIF87a", 0, "image/gif"),
    (b"GIF89a", 0, "image/gif"),
    (b"ftyp", 4, "video/mp4"),
    (b"\x1a\x45\xdf\xa3", 0, "video/webm"),
)


@dataclass(frozen=True, slots=True)
class _ModelTurn:
    """The native side of a ProviderTurn: the model content to send back."""

    content: types.Content
    generated_ids: frozenset[str]  # call ids we made up because the API sent none


@dataclass(slots=True)
class _TurnState:
    parts: list[types.Part] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    generated_ids: set[str] = field(default_factory=set)
    usage: types.GenerateContentResponseUsageMetadata | None = None


class GeminiSession(SdkSession):
    """One variant's conversation with a Gemini model."""

    def __init__(self, config: base.SessionConfig, *, client: genai.Client | None = None) -> None:
        super().__init__(config, owns_client=client is None)
        self._client = client or genai.Client(
            vertexai=False, api_key=config.api_key, http_options=_http_options(config)
        )
        prompt = list(config.messages)
        system = prompt.pop(0).text if prompt and prompt[0].role == "system" else ""
        self._contents = [c for c in (_content_of(m) for m in prompt) if c is not None]
        self._pending: list[tuple[_ModelTurn, list[ExecutedTool]]] = []
        self._generation = _generation_config(config, system)

    async def stream_turn(self, on_event: base.OnEvent) -> ProviderTurn:
        await self._add_pending_results()
        progress = TurnProgress()
        emit = progress.forward(on_event)
        state = _TurnState()
        with self._mapped_errors(progress):
            stream = await self._client.aio.models.generate_content_stream(
                model=self._config.api_name, contents=list(self._contents), config=self._generation
            )
        async with aclosing(
            cast(AsyncGenerator[types.GenerateContentResponse, None], stream)
        ) as chunks:
            while True:
                with self._mapped_errors(progress):
                    # The SDK puts no limit on a streamed body; a silent server must not
                    # hold the turn forever.
                    async with asyncio.timeout(self._config.request_timeout_s):
                        chunk = await anext(chunks, None)
                if chunk is None:
                    break
                for event in _chunk_events(chunk, state):
                    await emit(event)

        usage = _usage_of(state.usage)
        self._add_usage(usage)
        native = _ModelTurn(
            types.Content(role="model", parts=state.parts), frozenset(state.generated_ids)
        )
        return ProviderTurn("".join(state.text), state.calls, usage, native=native)

    def append_tool_results(self, turn: ProviderTurn, executed: Sequence[ExecutedTool]) -> None:
        if not isinstance(turn.native, _ModelTurn) or not turn.native.content.parts:
            raise ValueError("Gemini turn is missing the model content to send back")
        self._pending.append((turn.native, list(executed)))

    async def _close_client(self) -> None:
        await self._client.aio.aclose()

    async def _add_pending_results(self) -> None:
        pending, self._pending = self._pending, []
        for model_turn, executed in pending:
            parts = [await _function_response(t, model_turn.generated_ids) for t in executed]
            self._contents.append(
                model_turn.content.model_copy(
                    update={"parts": replay.gemini_parts(model_turn.content.parts or [], executed)}
                )
            )
            self._contents.append(types.Content(role="user", parts=parts))

    @contextmanager
    def _mapped_errors(self, progress: TurnProgress) -> Iterator[None]:
        config = self._config
        try:
            yield
        except genai_errors.APIError as exc:
            # Gemini answers a wrong key with 400 INVALID_ARGUMENT, not 401.
            status = 401 if _is_invalid_key(exc) else int(exc.code or 0)
            detail = str(exc.message or exc.status or "request failed")
            raise errors.status_error(config, status, detail) from exc
        except TimeoutError as exc:
            raise errors.timed_out(config.provider) from exc
        except aiohttp.ClientError as exc:
            # The SDK turns HTTP statuses into APIError; what is left is the transport.
            raise errors.connection_lost(config, progress.streamed) from exc
        except (genai_errors.UnknownApiResponseError, pydantic.ValidationError) as exc:
            detail = "the server sent an unreadable response"
            raise errors.stream_failed(config.provider, detail) from exc


def _is_invalid_key(exc: genai_errors.APIError) -> bool:
    text = f"{exc.message} {exc.details}"
    return exc.code == 400 and ("API_KEY_INVALID" in text or "API key not valid" in text)


def _chunk_events(
    chunk: types.GenerateContentResponse, state: _TurnState
) -> Iterator[base.StreamEvent]:
    if chunk.usage_metadata is not None:
        state.usage = chunk.usage_metadata
    candidate = chunk.candidates[0] if chunk.candidates else None
    if candidate is None or candidate.content is None or not candidate.content.parts:
        return
    for part in candidate.content.parts:
        # Every part is kept, even empty ones: a signature may ride on any of them.
        state.parts.append(part)
        if part.function_call is not None:
            call = part.function_call
            call_id = call.id
            if not call_id:
                call_id = f"tool-{secrets.token_hex(6)}"
                state.generated_ids.add(call_id)
            name = call.name or "unknown_tool"
            arguments = dict(call.args or {})
            state.calls.append(ToolCall(call_id, name, arguments))
            # Gemini sends arguments whole, so they arrive as one fragment (the engine
            # replays a whole create_file content as a paced preview: PreviewReplay).
            yield base.ToolCallDelta(call_id, name, json.dumps(arguments))
        elif part.text:
            if part.thought:
                yield base.ThinkingDelta(part.text)
            else:
                state.text.append(part.text)
                yield base.AssistantDelta(part.text)


def _usage_of(meta: types.GenerateContentResponseUsageMetadata | None) -> Usage:
    if meta is None:
        return Usage()
    return Usage.cached_within(
        meta.prompt_token_count or 0,
        meta.cached_content_token_count,
        # Gemini counts thinking apart; Usage's output includes it.
        (meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0),
        meta.total_token_count or 0,
    )


def _http_options(config: base.SessionConfig) -> types.HttpOptions:
    # Retries are explicit: without them the SDK's aiohttp path silently sleeps
    # 1–10 s and retries once on a refused connection.
    options = types.HttpOptions(
        retry_options=types.HttpRetryOptions(attempts=config.max_retries + 1)
    )
    if config.base_url:
        options.base_url = config.base_url
    return options


def _generation_config(config: base.SessionConfig, system: str) -> types.GenerateContentConfig:
    thinking = None
    if config.effort:
        thinking = types.ThinkingConfig(
            thinking_level=types.ThinkingLevel(config.effort), include_thoughts=True
        )
    tools: list[types.ToolUnion] | None = None
    if config.tools:
        declarations = [
            types.FunctionDeclaration(
                name=t.name, description=t.description, parameters_json_schema=t.input_schema
            )
            for t in config.tools
        ]
        tools = [types.Tool(function_declarations=declarations)]
    return types.GenerateContentConfig(
        temperature=1.0,
        max_output_tokens=config.max_output_tokens,
        system_instruction=system or None,
        thinking_config=thinking,
        tools=tools,
        # The engine runs the tools; the SDK must never try to.
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )


def _content_of(message: base.PromptMessage) -> types.Content | None:
    parts: list[types.Part] = []
    if message.text:
        parts.append(types.Part(text=message.text))
    for url in (*message.images, *message.videos):
        part = _media_part(url)
        if part is not None:
            parts.append(part)
    if not parts:
        return None
    return types.Content(role="model" if message.role == "assistant" else "user", parts=parts)


def _media_part(url: str) -> types.Part | None:
    if not url.startswith("data:"):
        mime_type, _ = mimetypes.guess_type(url)
        return types.Part(file_data=types.FileData(file_uri=url, mime_type=mime_type))
    try:
        mime_type, data = parse_data_url(url)
    except ValueError:
        logger.warning("skipping an input whose data URL does not decode")
        return None
    if mime_type == "application/octet-stream":
        sniffed = _sniff(data)
        if sniffed is None:
            logger.warning("skipping an input of unknown media type")
            return None
        mime_type = sniffed
    if mime_type.startswith("video/"):
        return types.Part(
            inline_data=types.Blob(data=data, mime_type=mime_type),
            video_metadata=types.VideoMetadata(fps=_VIDEO_FPS),
            media_resolution=types.PartMediaResolution(
                level=types.PartMediaResolutionLevel.MEDIA_RESOLUTION_HIGH
            ),
        )
    return types.Part.from_bytes(
        data=data,
        mime_type=mime_type,
        media_resolution=types.PartMediaResolutionLevel.MEDIA_RESOLUTION_ULTRA_HIGH,
    )


def _sniff(data: bytes) -> str | None:
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    for magic, offset, mime_type in _SIGNATURES:
        if data[offset : offset + len(magic)] == magic:
            return mime_type
    return None


async def _function_response(executed: ExecutedTool, generated_ids: frozenset[str]) -> types.Part:
    call = executed.call
    media = await _media_blobs(executed.media)
    return types.Part(
        function_response=types.FunctionResponse(
            # An id the API never sent would match no call; send none instead.
            id=None if call.id in generated_ids else call.id,
            name=call.name,
            response=executed.result,
            parts=media or None,
        )
    )


async def _media_blobs(media: Sequence[MediaPart]) -> list[types.FunctionResponsePart]:
    if not media:
        return []
    downloads: dict[int, tuple[bytes, str] | None] = {}
    urls = [(i, p.url) for i, p in enumerate(media) if p.data is None and p.url is not None]
    if urls:
        timeout = aiohttp.ClientTimeout(total=DOWNLOAD_TIMEOUT_S)
        async with aiohttp.ClientSession(timeout=timeout, trust_env=True) as session:
            results = await asyncio.gather(*(_download(session, url) for _, url in urls))
        downloads = {i: result for (i, _), result in zip(urls, results, strict=True)}
    blobs: list[types.FunctionResponsePart] = []
    for index, part in enumerate(media):
        if part.data is not None:
            data, mime_type = part.data, part.mime_type
        else:
            downloaded = downloads.get(index)
            if downloaded is None:
                continue
            data, mime_type = downloaded
            if not mime_type.startswith("image/"):
                mime_type = part.mime_type
        blobs.append(
            types.FunctionResponsePart.from_bytes(
                data=data, mime_type=mime_type, display_name=part.display_name
            )
        )
    return blobs


async def _download(session: aiohttp.ClientSession, url: str) -> tuple[bytes, str] | None:
    """The image at `url` and its content type, or None: a lost image must not fail the turn."""
    try:
        async with session.get(url) as response:
            if response.status != 200:
                logger.warning("tool image download failed with HTTP %d", response.status)
                return None
            body = bytearray()
            async for chunk in response.content.iter_chunked(64 * 1024):
                body += chunk
                if len(body) > MAX_DOWNLOAD_BYTES:
                    logger.warning("tool image larger than %d bytes skipped", MAX_DOWNLOAD_BYTES)
                    return None
            return bytes(body), response.content_type
    except (aiohttp.ClientError, TimeoutError) as exc:
        logger.warning("tool image download failed: %s", type(exc).__name__)
        return None
