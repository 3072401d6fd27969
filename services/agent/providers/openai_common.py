"""Pieces shared by the two OpenAI SDK sessions (Responses and Chat Completions)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import openai

from services.agent.providers import errors
from services.agent.providers.base import MediaPart, ProviderError, SessionConfig
from services.agent.providers.streaming import TurnProgress


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


def media_url(part: MediaPart) -> str:
    """The part as something an image field accepts: its URL, or its bytes as a data URL."""
    if part.url is not None:
        return part.url
    data = base64.b64encode(part.data or b"").decode("ascii")
    return f"data:{part.mime_type};base64,{data}"


def result_json(result: dict[str, Any]) -> str:
    return json.dumps(result, ensure_ascii=False)
