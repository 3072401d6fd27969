"""User-facing texts for provider failures, shared by every provider module.

Each message says what to fix. None of them may include a key.
"""

from __future__ import annotations

from services.agent.providers.base import ProviderError

_KEY_ENV = {
    "OpenAI": "OPENAI_API_KEY",
    "Anthropic": "ANTHROPIC_API_KEY",
    "Gemini": "GEMINI_API_KEY",
    "OpenAI-compatible server": "OPENAI_API_KEY",
}


def missing_key(provider: str) -> ProviderError:
    return ProviderError(
        f"{provider} API key is missing. Add it in the settings dialog or set {_KEY_ENV[provider]}."
    )


def bad_key(provider: str) -> ProviderError:
    return ProviderError(
        f"Incorrect {provider} API key (the API answered 401/403). Check the key in the "
        f"settings dialog or {_KEY_ENV[provider]}, or create a new one."
    )


def unknown_model(provider: str, api_name: str) -> ProviderError:
    return ProviderError(
        f"{provider} does not know the model '{api_name}' or your key has no access to it. "
        "Pick another model or check your account's model access."
    )


def rate_limited(provider: str, *, streamed: bool = False) -> ProviderError:
    return ProviderError(
        f"{provider} rate limit or quota exceeded (429). Wait and retry, or check your plan "
        "and billing details.",
        retryable=True,
        streamed=streamed,
    )


def timed_out(provider: str, *, streamed: bool = False) -> ProviderError:
    return ProviderError(
        f"{provider} did not answer in time. Retry; if it keeps happening, the service may be "
        "overloaded.",
        retryable=True,
        streamed=streamed,
    )


def upstream_failed(provider: str, status: int, *, streamed: bool = False) -> ProviderError:
    return ProviderError(
        f"{provider} returned a server error ({status}). Retry in a moment.",
        retryable=True,
        streamed=streamed,
    )


def unreachable(provider: str, base_url: str | None) -> ProviderError:
    where = f" at {base_url}" if base_url else ""
    return ProviderError(
        f"Could not connect to {provider}{where}. Check the base URL and that the server is "
        "running.",
        retryable=True,
    )


def stream_failed(provider: str, detail: str) -> ProviderError:
    return ProviderError(f"{provider} stream failed: {detail}", streamed=True)


def bad_request(provider: str, detail: str) -> ProviderError:
    return ProviderError(f"{provider} rejected the request: {detail}")
