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
import logging
import mimetypes
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import httpx2
import pydantic
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from services.agent.providers import base, errors, gemini_stream, raw_stream, replay, sse
from services.agent.providers.base import ExecutedTool, MediaPart, ProviderError, ProviderTurn
from services.agent.providers.clients import ClientKind, ClientPool
from services.agent.providers.gemini_stream import ChunkReader, open_stream
from services.agent.providers.streaming import SdkSession, TurnProgress
from services.common.input_images import InputImage
from services.common.uploads import parse_data_url

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

    parts: tuple[dict[str, Any], ...]  # as streamed (gemini_stream)
    generated_ids: frozenset[str]  # call ids we made up because the API sent none


def new_client(config: base.SessionConfig) -> genai.Client:
    return genai.Client(vertexai=False, api_key=config.api_key, http_options=_http_options(config))


async def close_client(client: genai.Client) -> None:
    await client.aio.aclose()


class GeminiSession(SdkSession):
    """One variant's conversation with a Gemini model."""

    def __init__(self, config: base.SessionConfig, *, client: genai.Client | None = None) -> None:
        super().__init__(config, owns_client=client is None)
        self._client = client or new_client(config)
        prompt = list(config.messages)
        system = prompt.pop(0).text if prompt and prompt[0].role == "system" else ""
        contents = (_content_of(m, config.prepared) for m in prompt)
        self._contents = [c for c in contents if c is not None]
        self._pending: list[tuple[_ModelTurn, list[ExecutedTool]]] = []
        self._generation = _generation_config(config, system)

    async def stream_turn(self, on_event: base.OnEvent) -> ProviderTurn:
        await self._add_pending_results()
        progress = TurnProgress()
        emit = progress.forward(on_event)
        reader = ChunkReader(self._config)
        mapped = errors.MappedErrors(lambda exc: _provider_error(exc, self._config, progress))
        generation = self._generation
        while True:
            await self._read_hop(generation, reader, emit, mapped)
            # A reply cut at the per-request limit goes on in a new request, as the
            # SDK's own stream does (automatic continuation).
            token = reader.next_hop()
            if token is None:
                break
            generation = self._generation.model_copy(update={"continuation_token": token})
        turn = reader.turn()
        self._add_usage(turn.usage)
        native = _ModelTurn(tuple(turn.parts), frozenset(turn.generated_ids))
        return ProviderTurn(turn.text, turn.calls, turn.usage, native=native)

    async def _read_hop(
        self,
        generation: types.GenerateContentConfig,
        reader: ChunkReader,
        emit: base.OnEvent,
        mapped: errors.MappedErrors,
    ) -> None:
        """One request of the turn, its body read to the end."""
        # The SDK puts no limit on a streamed body; a silent server must not hold the
        # turn forever, so the request and every read get the whole timeout.
        timeout_s = self._config.request_timeout_s
        with mapped:
            async with asyncio.timeout(timeout_s):
                body = await open_stream(
                    self._client, self._config.api_name, list(self._contents), generation
                )
        try:
            await raw_stream.forward(body.chunks(), reader, emit, mapped, timeout_s)
        finally:
            await body.close()

    def append_tool_results(self, turn: ProviderTurn, executed: Sequence[ExecutedTool]) -> None:
        if not isinstance(turn.native, _ModelTurn) or not turn.native.parts:
            raise ValueError("Gemini turn is missing the model content to send back")
        self._pending.append((turn.native, list(executed)))

    def append_user_turn(self, turn: ProviderTurn, message: base.PromptMessage) -> None:
        # Tool results are pending only after a turn that called tools, never this one.
        if isinstance(turn.native, _ModelTurn) and turn.native.parts:
            parts = replay.gemini_parts(gemini_stream.model_parts(turn.native.parts), [])
            self._contents.append(types.Content(role="model", parts=parts))
        content = _content_of(message, self._config.prepared)
        if content is not None:
            self._contents.append(content)

    async def _close_client(self) -> None:
        await close_client(self._client)

    async def _add_pending_results(self) -> None:
        pending, self._pending = self._pending, []
        for model_turn, executed in pending:
            parts = [await _function_response(t, model_turn.generated_ids) for t in executed]
            model_parts = replay.gemini_parts(gemini_stream.model_parts(model_turn.parts), executed)
            self._contents.append(types.Content(role="model", parts=model_parts))
            self._contents.append(types.Content(role="user", parts=parts))


def _provider_error(
    exc: Exception, config: base.SessionConfig, progress: TurnProgress
) -> ProviderError | None:
    """The one place where SDK and transport exceptions become user-facing errors."""
    if isinstance(exc, genai_errors.APIError):
        message = str(exc.message or exc.status or "")
        return gemini_stream.api_failure(config, int(exc.code or 0), message, str(exc.details))
    if isinstance(exc, TimeoutError | httpx2.TimeoutException):
        return errors.timed_out(config.provider)
    if isinstance(exc, aiohttp.ClientError | httpx2.TransportError):
        # The SDK turns HTTP statuses into APIError; what is left is the transport.
        return errors.connection_lost(config, progress.streamed)
    if isinstance(
        exc,
        genai_errors.UnknownApiResponseError
        | pydantic.ValidationError
        | sse.JSONDecodeError
        | KeyError
        | TypeError
        | AttributeError,
    ):
        detail = "the server sent an unreadable response"
        return errors.stream_failed(config.provider, detail)
    return None


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


def _content_of(
    message: base.PromptMessage, prepared: Mapping[str, InputImage]
) -> types.Content | None:
    parts: list[types.Part] = []
    if message.text:
        parts.append(types.Part(text=message.text))
    for url in (*message.images, *message.videos):
        part = _media_part(url, prepared)
        if part is not None:
            parts.append(part)
    if not parts:
        return None
    return types.Content(role="model" if message.role == "assistant" else "user", parts=parts)


def _media_part(url: str, prepared: Mapping[str, InputImage]) -> types.Part | None:
    if not url.startswith("data:"):
        mime_type, _ = mimetypes.guess_type(url)
        return types.Part(file_data=types.FileData(file_uri=url, mime_type=mime_type))
    image = prepared.get(url)  # the generation's own images, parsed once by its plan
    if image is not None:
        mime_type, data = image.mime_type, image.data
    else:  # a video
        try:
            parsed = parse_data_url(url)
        except ValueError:
            logger.warning("skipping an input whose data URL does not decode")
            return None
        mime_type, data = parsed.content_type, parsed.data
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


def session(config: base.SessionConfig, clients: ClientPool) -> base.ProviderSession:
    """The provider registry's builder (registry.py): a session around the pool's client."""
    kind = ClientKind("gemini", new_client, close_client)
    return clients.session(config, kind, lambda client: GeminiSession(config, client=client))
