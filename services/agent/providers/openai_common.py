"""Pieces shared by the two OpenAI SDK sessions (Responses and Chat Completions)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import openai
from openai import Omit, omit

from services.agent.providers import errors
from services.agent.providers.base import MediaPart, ProviderError, SessionConfig
from services.agent.providers.streaming import SdkSession, TurnProgress, lineage_cache_key


def _detail(err: openai.APIError) -> str:
    body = err.body
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
    return err.message


@contextmanager
def provider_errors(config: SessionConfig, progress: TurnProgress) -> Iterator[None]:
    """Turns every SDK exception raised inside the block into a user-facing ProviderError.

    The order of the `except` clauses matters: the SDK's timeout error is a connection
    error, and every status error is an `APIError`.
    """
    name, key = config.provider, config.api_key
    try:
        yield
    except ProviderError:
        raise
    except openai.APITimeoutError as exc:
        raise errors.timed_out(name) from exc
    except openai.APIConnectionError as exc:
        raise errors.connection_lost(config, progress.streamed) from exc
    except openai.APIStatusError as exc:
        raise errors.status_error(config, exc.status_code, _detail(exc)) from exc
    except openai.APIResponseValidationError as exc:
        raise errors.stream_failed(name, "the server sent data in an unexpected shape") from exc
    except openai.APIError as exc:
        # A payload with an "error" key in the middle of a stream.
        raise errors.stream_failed(name, errors.redact(_detail(exc), key)) from exc
    except openai.OpenAIError as exc:
        raise ProviderError(f"{name.display} client error: {errors.redact(str(exc), key)}") from exc


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
        api_key = config.api_key or self.keyless_placeholder
        if client is None and not api_key:
            raise errors.missing_key(config.provider)
        super().__init__(config, owns_client=client is None)
        self._client = client or openai.AsyncOpenAI(
            api_key=api_key,
            base_url=config.base_url,
            max_retries=config.max_retries,
            timeout=config.request_timeout_s,
        )
        self._cache_key: str | Omit = lineage_cache_key(config.messages) if prompt_caching else omit
        self._start(config)

    def _start(self, config: SessionConfig) -> None:
        raise NotImplementedError

    async def _close_client(self) -> None:
        await self._client.close()


def media_url(part: MediaPart) -> str:
    """The part as something an image field accepts: its URL, or its bytes as a data URL."""
    if part.url is not None:
        return part.url
    data = base64.b64encode(part.data or b"").decode("ascii")
    return f"data:{part.mime_type};base64,{data}"


def result_json(result: dict[str, Any]) -> str:
    return json.dumps(result, ensure_ascii=False)
