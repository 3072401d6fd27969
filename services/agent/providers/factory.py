"""Builds the provider session for a variant's model."""

from __future__ import annotations

from collections.abc import Sequence

from services.agent.demo import demo_script
from services.agent.domain import GenerationRequest
from services.agent.models import ModelSpec
from services.agent.providers import errors
from services.agent.providers.base import (
    PromptMessage,
    ProviderError,
    ProviderSession,
    SessionConfig,
    ToolSpec,
)
from services.agent.providers.scripted import ScriptedSession
from services.agent.settings import AgentSettings
from services.common.credentials import CredentialsError, Provider

_PROVIDERS: dict[str, Provider] = {"openai": "openai", "anthropic": "anthropic", "gemini": "gemini"}


class ProviderSessions:
    """The `SessionFactory` the agent runs with: a session of the model's own provider."""

    def __init__(self, settings: AgentSettings) -> None:
        self._settings = settings

    def __call__(
        self,
        spec: ModelSpec,
        *,
        variant_index: int,
        messages: Sequence[PromptMessage],
        tools: Sequence[ToolSpec],
        request: GenerationRequest,
    ) -> ProviderSession:
        if spec.provider == "demo":
            script = demo_script(
                request.prompt.text,
                request.stack,
                variant_index,
                tools_offered=[t.name for t in tools],
            )
            return ScriptedSession(script, pace_s=self._settings.demo_pace_s)
        policy = self._settings.credential_policy
        try:
            if spec.provider == "openai-compatible":
                key, base_url = policy.endpoint(request.credentials, "openai")
                # The operator's own local server wins over any OpenAI base URL; sending
                # either key to an endpoint the operator configured is within the rule.
                if self._settings.local_base_url:
                    base_url = self._settings.local_base_url
            else:
                key, base_url = policy.endpoint(request.credentials, _PROVIDERS[spec.provider])
        except CredentialsError as exc:
            # The servicer refuses these requests up front; this guards other callers.
            raise ProviderError(f"Refused credentials: {exc}") from None
        config = SessionConfig(
            model_id=spec.id,
            api_name=spec.api_name,
            effort=spec.effort,
            api_key=key,
            base_url=base_url or None,
            messages=tuple(messages),
            tools=tuple(tools),
            max_retries=self._settings.provider_max_retries,
        )
        if spec.provider == "openai":
            from services.agent.providers.openai_responses import OpenAIResponsesSession

            _require(key, "OpenAI")
            return OpenAIResponsesSession(config)
        if spec.provider == "anthropic":
            from services.agent.providers.anthropic import AnthropicSession

            _require(key, "Anthropic")
            return AnthropicSession(config)
        if spec.provider == "gemini":
            from services.agent.providers.gemini import GeminiSession

            _require(key, "Gemini")
            return GeminiSession(config)
        from services.agent.providers.openai_chat import OpenAIChatSession

        if not base_url:
            raise ProviderError(
                f"Model {spec.id} needs an OpenAI-compatible server: set S2C_LOCAL_BASE_URL "
                "(or OPENAI_BASE_URL), e.g. http://127.0.0.1:11434/v1 for Ollama."
            )
        return OpenAIChatSession(config)


def _require(key: str, provider: str) -> None:
    if not key:
        raise errors.missing_key(provider)
