"""Pieces shared by the two OpenAI SDK sessions (Responses and Chat Completions)."""

from __future__ import annotations

import base64
import json
import ssl
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import Any, Protocol

import aiohttp
import anyio
import httpx2
import openai
from openai import AsyncAPIResponse, Omit, omit

from services.agent.providers import errors, raw_stream, sse
from services.agent.providers.base import (
    MediaPart,
    OnEvent,
    ProviderError,
    ProviderName,
    SessionConfig,
)
from services.agent.providers.errors import redact
from services.agent.providers.streaming import SdkSession, TurnProgress, lineage_cache_key

# What the SDK itself counts as a broken connection while it reads a body (its
# `request_exceptions`); reading the body raw, we meet them unwrapped.
_TRANSPORT_ERRORS = (httpx2.RequestError, ssl.SSLError, anyio.EndOfStream)
# How a record of an unexpected shape fails a reader that indexes it directly.
_SHAPE_ERRORS = (sse.JSONDecodeError, KeyError, TypeError, AttributeError, IndexError)


def _timed_out(exc: BaseException) -> bool:
    """Whether `exc` is a timeout. openai 3.57's aiohttp transport maps every aiohttp
    connection error to `ConnectTimeout`, a refused connection too (Anthropic's copy of
    the same transport maps them to `ConnectError`): the aiohttp error under it says
    which it was."""
    if not isinstance(exc, openai.APITimeoutError | httpx2.TimeoutException):
        return False
    cause = exc.__cause__
    while cause is not None:
        if isinstance(cause, aiohttp.ServerTimeoutError):
            return True
        if isinstance(cause, aiohttp.ClientConnectionError):
            return False
        cause = cause.__cause__
    return True


def error_detail(err: openai.APIError) -> str:
    body = err.body
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
    return err.message


def provider_error(
    exc: Exception, config: SessionConfig, progress: TurnProgress
) -> ProviderError | None:
    """The user-facing error for an SDK or transport exception; None: not a provider
    failure (it goes on unchanged).

    Order matters: a timeout is a connection error, and every status error is an
    `APIError`. Reading the body raw, we meet the transport's own exceptions, which the
    SDK's typed stream wrapped as its connection errors.
    """
    name, key = config.provider, config.api_key
    if _timed_out(exc):
        return errors.timed_out(name)
    if isinstance(exc, (openai.APIConnectionError, *_TRANSPORT_ERRORS)):
        return errors.connection_lost(config, progress.streamed)
    if isinstance(exc, openai.APIStatusError):
        return errors.status_error(config, exc.status_code, error_detail(exc))
    if isinstance(exc, (openai.APIResponseValidationError, *_SHAPE_ERRORS)):
        return errors.stream_failed(name, "the server sent data in an unexpected shape")
    if isinstance(exc, openai.APIError):
        return errors.stream_failed(name, errors.redact(error_detail(exc), key))
    if isinstance(exc, openai.OpenAIError):
        return ProviderError(f"{name.display} client error: {errors.redact(str(exc), key)}")
    return None


class StreamReader(raw_stream.BatchReader, Protocol):
    """A turn's records → stream events; `done` once a `data: [DONE]` record ended the
    stream (the SDK stops reading there, and so do we)."""

    done: bool


def payload_error(record: Any, name: ProviderName, api_key: str) -> ProviderError | None:
    """A record `{"error": {...}}` in the middle of a stream, as the SDK reads one."""
    if not isinstance(record, dict):
        return None
    error = record.get("error")
    if not error:
        return None
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str) or not message:
        message = "An error occurred during streaming"
    return errors.stream_failed(name, redact(message, api_key))


async def read_stream(
    request: AbstractAsyncContextManager[AsyncAPIResponse[Any]],
    reader: StreamReader,
    on_event: OnEvent,
    config: SessionConfig,
) -> None:
    """Sends `request` through the SDK (auth, retries, status errors), then reads the body
    raw (`raw_stream.forward`: one `reader.feed` per network read, its events forwarded
    before the next read) up to `[DONE]` or the end of the body.

    Leaving by any path, cancellation included, closes the HTTP response at once, so the
    server stops generating too.
    """
    progress = TurnProgress()
    mapped = errors.MappedErrors(lambda exc: provider_error(exc, config, progress))
    async with AsyncExitStack() as stack:
        with mapped:
            response = await stack.enter_async_context(request)
        # The httpx response's own iterator: the SDK's `iter_bytes` only wraps it, one
        # more generator to resume per network read.
        chunks = response.http_response.aiter_bytes()
        emit = progress.forward(on_event)
        await raw_stream.forward(chunks, reader, emit, mapped, ended=lambda: reader.done)


def without_none(value: Any) -> Any:
    """JSON with every null member dropped, at any depth: an output item as the next
    request sends it back (the SDK's `model_dump(exclude_none=True)` of it)."""
    if isinstance(value, dict):
        return {k: without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_none(v) for v in value]
    return value


class OpenAISession(SdkSession):
    """What the Responses and the Chat Completions sessions share: the SDK client and
    the prompt-cache key. Each builds its own conversation state in `_start`.

    A client passed in is the caller's to close; one made here is closed by `close`.
    """

    # The key sent when the config has none (servers that ignore it); None: one is required.
    keyless_placeholder: str | None = None

    def __init__(
        self,
        config: SessionConfig,
        *,
        client: openai.AsyncOpenAI | None = None,
        prompt_caching: bool = True,
    ) -> None:
        """`prompt_caching=False` sends no cache key (the cost bench's baseline)."""
        super().__init__(config, owns_client=client is None)
        self._client = client or self.new_client(config)
        self._cache_key: str | Omit = lineage_cache_key(config.messages) if prompt_caching else omit
        self._start(config)

    @classmethod
    def new_client(cls, config: SessionConfig) -> openai.AsyncOpenAI:
        """The SDK client this session class builds for `config` (the agent's client pool
        calls it once per distinct credential)."""
        api_key = config.api_key or cls.keyless_placeholder
        if not api_key:
            raise errors.missing_key(config.provider)
        return openai.AsyncOpenAI(
            api_key=api_key,
            base_url=config.base_url,
            max_retries=config.max_retries,
            timeout=config.request_timeout_s,
            # The SDK's aiohttp transport: reading a model-paced stream costs less than half
            # what its default httpx/anyio stack does per network read (bench/read_stack.py).
            http_client=openai.DefaultAioHttpClient(),
        )

    def _start(self, config: SessionConfig) -> None:
        raise NotImplementedError

    async def _close_client(self) -> None:
        await close_client(self._client)


async def close_client(client: openai.AsyncOpenAI) -> None:
    await client.close()


def media_url(part: MediaPart) -> str:
    """The part as something an image field accepts: its URL, or its bytes as a data URL."""
    if part.url is not None:
        return part.url
    data = base64.b64encode(part.data or b"").decode("ascii")
    return f"data:{part.mime_type};base64,{data}"


def result_json(result: dict[str, Any]) -> str:
    return json.dumps(result, ensure_ascii=False)
