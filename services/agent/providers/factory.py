"""Builds the provider session for a variant's model, from the registry's entry."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from services.agent.demo import demo_turns
from services.agent.domain import GenerationRequest
from services.agent.endpoints import MODELS_FILE_ENV, PLACEHOLDER_KEY
from services.agent.models import ModelSpec
from services.agent.providers import errors, registry
from services.agent.providers.base import (
    PromptMessage,
    ProviderError,
    ProviderName,
    ProviderSession,
    SessionConfig,
    ToolSpec,
)
from services.agent.providers.clients import ClientPool
from services.agent.providers.scripted import ScriptedSession
from services.agent.settings import AgentSettings
from services.common.credentials import BY_ID, Credentials
from services.common.images import ImageDecoder
from services.common.input_images import InputImage


@dataclass(frozen=True, slots=True)
class SessionRequest:
    """What a session factory is asked for: one variant's model session."""

    spec: ModelSpec
    variant_index: int
    messages: tuple[PromptMessage, ...]
    tools: tuple[ToolSpec, ...]
    request: GenerationRequest
    # Every credential source's key and base URL, resolved by the plan (planning.py).
    credentials: Credentials
    # The generation's input images by data URL, parsed once (GenerationPlan.images_by_url).
    images: Mapping[str, InputImage] = field(default_factory=dict)


# The agent's one seam for model sessions: the default providers go through it, and tests
# and the load bench pass their own.
SessionFactory = Callable[[SessionRequest], ProviderSession]


class ProviderSessions:
    """The `SessionFactory` the agent runs with: a session of the model's own provider,
    its SDK client shared with the sessions of the same credentials (clients.py). Its
    owner calls `aclose` once no session runs any more."""

    def __init__(self, settings: AgentSettings) -> None:
        self.settings = settings
        self.clients = ClientPool()
        # The process's one image budget: every session decodes through it.
        self.images = ImageDecoder(settings.images)

    async def aclose(self) -> None:
        await self.clients.aclose()

    def __call__(self, wanted: SessionRequest) -> ProviderSession:
        spec, request, tools = wanted.spec, wanted.request, wanted.tools
        if spec.provider == "demo":
            script = demo_turns(
                request, wanted.variant_index, tools_offered=[t.name for t in tools]
            )
            return ScriptedSession(script, pace_s=self.settings.demo_pace_s)
        if spec.endpoint:
            return self._endpoint_session(wanted)
        provider = registry.get(spec.provider)
        if provider.override is not None:
            return self._local_session(wanted, provider, provider.override)
        endpoint = wanted.credentials.get(provider.credential)
        base_url = endpoint.base_url or BY_ID[provider.credential].default_base_url
        if not endpoint.api_key:
            raise errors.missing_key(provider.name)
        config = self._config(wanted, provider.name, endpoint.api_key, base_url)
        return provider.session(config, self.clients)

    def _local_session(
        self,
        wanted: SessionRequest,
        provider: registry.ProviderSpec,
        local: registry.EndpointOverride,
    ) -> ProviderSession:
        """A `local:` model, which any request may name: the operator's server and no key.
        Neither the environment's key nor a request's is that server's to see (an Ollama
        or vLLM host, perhaps over plain HTTP); a server that wants one is a models-file
        endpoint with its own `api_key_env`. Its base URL is the operator's alone too:
        S2C_LOCAL_BASE_URL, else the environment's (never a request's) base URL."""
        settings = self.settings
        base_url = local.base_url(settings) or settings.credentials.base_url(provider.credential)
        if not base_url:
            raise ProviderError(local.missing.format(model=wanted.spec.id))
        name = ProviderName(provider.display_name, MODELS_FILE_ENV)
        return provider.session(self._config(wanted, name, "", base_url), self.clients)

    def _endpoint_session(self, wanted: SessionRequest) -> ProviderSession:
        """A models-file model: the endpoint's own key and URL, never a request's."""
        endpoint = self.settings.endpoint(wanted.spec.endpoint)
        if endpoint is None:  # the plan resolved it with these settings
            raise ProviderError(f"No endpoint {wanted.spec.endpoint} in the models file.")
        api = registry.ENDPOINT_APIS[endpoint.api]
        name = ProviderName(
            f"{api.display_name} '{endpoint.name}'", endpoint.api_key_env or MODELS_FILE_ENV
        )
        key = endpoint.api_key or PLACEHOLDER_KEY
        config = self._config(wanted, name, key, endpoint.base_url)
        return api.session(replace(config, api_version=endpoint.api_version), self.clients)

    def _config(
        self, wanted: SessionRequest, name: ProviderName, api_key: str, base_url: str
    ) -> SessionConfig:
        spec = wanted.spec
        config = SessionConfig(
            provider=name,
            model_id=spec.id,
            api_name=spec.api_name,
            effort=spec.effort,
            api_key=api_key,
            base_url=base_url or None,
            messages=wanted.messages,
            tools=wanted.tools,
            price=spec.price,
            max_retries=self.settings.provider_max_retries,
            images=self.images,
            max_tool_calls=self.settings.max_tool_calls_per_turn,
            prepared=wanted.images,
        )
        if spec.max_output_tokens is not None:
            config = replace(config, max_output_tokens=spec.max_output_tokens)
        return config
