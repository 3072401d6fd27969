"""Pieces shared by the two OpenAI SDK sessions (Responses and Chat Completions)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import openai

from services.agent.providers import errors
from services.agent.providers.base import MediaPart, ProviderError, ToolCall


@dataclass(slots=True)
class TurnProgress:
    """Whether any output of the current turn has reached the user yet."""

    streamed: bool = False


def redact(text: str, secret: str) -> str:
    """Removes `secret` from `text`: servers echo keys back in some error messages."""
    if secret:
        text = text.replace(secret, "***")
    return text


def _detail(err: openai.APIError) -> str:
    body = err.body
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
    return err.message


@contextmanager
def provider_errors(
    provider: str,
    *,
    api_name: str,
    base_url: str | None,
    api_key: str,
    progress: TurnProgress,
) -> Iterator[None]:
    """Turns every SDK exception raised inside the block into a user-facing ProviderError.

    The order of the `except` clauses matters: the SDK's timeout error is a connection
    error, and every status error is an `APIError`.
    """
    try:
        yield
    except ProviderError:
        raise
    except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
        raise errors.bad_key(provider) from exc
    except openai.NotFoundError as exc:
        raise errors.unknown_model(provider, api_name) from exc
    except openai.RateLimitError as exc:
        raise errors.rate_limited(provider, streamed=progress.streamed) from exc
    except openai.APITimeoutError as exc:
        raise errors.timed_out(provider, streamed=progress.streamed) from exc
    except openai.APIConnectionError as exc:
        if progress.streamed:
            raise errors.stream_failed(provider, "the connection was lost") from exc
        raise errors.unreachable(provider, base_url) from exc
    except openai.APIStatusError as exc:
        if exc.status_code >= 500:
            raise errors.upstream_failed(
                provider, exc.status_code, streamed=progress.streamed
            ) from exc
        detail = redact(_detail(exc), api_key)
        raise errors.bad_request(provider, f"{detail} ({exc.status_code})") from exc
    except openai.APIResponseValidationError as exc:
        raise errors.stream_failed(provider, "the server sent data in an unexpected shape") from exc
    except openai.APIError as exc:
        # A payload with an "error" key in the middle of a stream.
        raise errors.stream_failed(provider, redact(_detail(exc), api_key)) from exc
    except openai.OpenAIError as exc:
        raise ProviderError(f"{provider} client error: {redact(str(exc), api_key)}") from exc


def media_url(part: MediaPart) -> str:
    """The part as something an image field accepts: its URL, or its bytes as a data URL."""
    if part.url is not None:
        return part.url
    data = base64.b64encode(part.data or b"").decode("ascii")
    return f"data:{part.mime_type};base64,{data}"


def parse_tool_call(call_id: str, name: str, raw: str) -> ToolCall:
    """A ToolCall from raw argument JSON; text that is not a JSON object is kept raw."""
    try:
        arguments = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        return ToolCall(call_id, name, {}, invalid_json=raw)
    if not isinstance(arguments, dict):
        return ToolCall(call_id, name, {}, invalid_json=raw)
    return ToolCall(call_id, name, arguments)


def result_json(result: dict[str, Any]) -> str:
    return json.dumps(result, ensure_ascii=False)
