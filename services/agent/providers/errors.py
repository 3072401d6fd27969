"""User-facing texts for provider failures, shared by every provider module.

Each message says what to fix. None of them may include a key: details a server sent
back go through `redact` first.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

from services.agent.providers.base import ProviderError, ProviderName, SessionConfig


def redact(text: str, secret: str) -> str:
    """Removes `secret` from `text`: servers echo keys back in some error messages."""
    return text.replace(secret, "***") if secret else text


def missing_key(name: ProviderName) -> ProviderError:
    return ProviderError(
        f"{name.display} API key is missing. Add it in the settings dialog or set {name.key_env}."
    )


def bad_key(name: ProviderName) -> ProviderError:
    return ProviderError(
        f"Incorrect {name.display} API key (the API answered 401/403). Check the key in the "
        f"settings dialog or {name.key_env}, or create a new one."
    )


def unknown_model(name: ProviderName, api_name: str) -> ProviderError:
    return ProviderError(
        f"{name.display} does not know the model '{api_name}' or your key has no access to "
        "it. Pick another model or check your account's model access."
    )


def rate_limited(name: ProviderName) -> ProviderError:
    return ProviderError(
        f"{name.display} rate limit or quota exceeded (429). Wait and retry, or check your "
        "plan and billing details."
    )


def timed_out(name: ProviderName) -> ProviderError:
    return ProviderError(
        f"{name.display} did not answer in time. Retry; if it keeps happening, the service "
        "may be overloaded."
    )


def upstream_failed(name: ProviderName, status: int) -> ProviderError:
    return ProviderError(f"{name.display} returned a server error ({status}). Retry in a moment.")


def unreachable(name: ProviderName, base_url: str | None) -> ProviderError:
    where = f" at {base_url}" if base_url else ""
    return ProviderError(
        f"Could not connect to {name.display}{where}. Check the base URL and that the server "
        "is running."
    )


def stream_failed(name: ProviderName, detail: str) -> ProviderError:
    return ProviderError(f"{name.display} stream failed: {detail}")


def bad_request(name: ProviderName, detail: str) -> ProviderError:
    return ProviderError(f"{name.display} rejected the request: {detail}")


def connection_lost(config: SessionConfig, streamed: bool) -> ProviderError:
    """A transport failure: once output reached the user the stream broke, before that
    the server could not be reached."""
    if streamed:
        return stream_failed(config.provider, "the connection was lost")
    return unreachable(config.provider, config.base_url)


def status_error(config: SessionConfig, status: int, detail: str) -> ProviderError:
    """An HTTP error status as the user should read it; every SDK maps through here."""
    name = config.provider
    if status in (401, 403):
        return bad_key(name)
    if status == 404:
        return unknown_model(name, config.api_name)
    if status == 429:
        return rate_limited(name)
    if status >= 500:
        return upstream_failed(name, status)
    return bad_request(name, f"{redact(detail, config.api_key)} ({status})")


class MappedErrors:
    """A `with` block whose exceptions leave as the ProviderError `convert` makes of
    them; one it returns None for (not a provider failure) goes on unchanged.

    A class rather than a generator context manager: the sessions enter one for
    every network read, and this costs a fraction of a `@contextmanager`.
    """

    __slots__ = ("_convert",)

    def __init__(self, convert: Callable[[Exception], ProviderError | None]) -> None:
        self._convert = convert

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if isinstance(exc, Exception) and not isinstance(exc, ProviderError):
            error = self._convert(exc)
            if error is not None:
                raise error from exc
