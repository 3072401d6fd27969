"""Every model provider, declared once.

A `ProviderSpec` is all the agent knows about a provider: its id, how texts name it,
which credential source (services/common/credentials.py) its key and base URL come
from, how its session is built (around an SDK client from the agent's pool,
clients.py), its catalogue models with their prices and the models its variants get when
its key is the only one. The factory, the catalogue, model selection, `ListModels`, the
demo's status line and the clients' price look-ups read this list; nothing else names a
provider. A session module is named once, as a string, and imported when first built
(the SDKs take seconds to import and most processes use one of them at most), except
those of the providers the agent has keys for, which it imports before it serves
(`configured_modules`).

To add a provider: a session module under `providers/` (with the functions that build
and close its SDK client, and `session(config, clients)`), one entry in `PROVIDERS`
(its models' prices included), and its test file
(docs/architecture.md, "To add …").
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from services.agent.pricing import Price
from services.agent.providers.base import ProviderName, ProviderSession, SessionConfig
from services.agent.providers.clients import ClientPool
from services.agent.settings import AgentSettings
from services.common.credentials import BY_ID


@dataclass(frozen=True, slots=True)
class ModelFamily:
    """Catalogue models of one API model: one id per effort level.

    Ids are upstream's `Llm` values, which its UI keys badges and tooltips on:
    `"{api_name} ({effort} {unit})"`, effort `none` reading `no` (`gpt-5.5 (no
    thinking)`); with no unit the id is the api name alone and the model runs at
    `efforts[0]`. `legacy_unit` names the unit of ids this catalogue used before; they
    stay accepted as aliases so pinned configurations keep working. `price` is the API
    model's, whatever the effort (USD per million tokens).
    """

    api_name: str
    efforts: tuple[str, ...]
    unit: str = ""
    legacy_unit: str = ""
    price: Price | None = None  # None: unpriced (its cost is unknown, not $0)
    # How its ids name it when not by the api name (`kimi-k3` for `moonshotai/kimi-k3`).
    name: str = ""
    # Its cap on a turn's output tokens; None: the session's default.
    max_output_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class EndpointOverride:
    """A base URL the operator configures in the agent's settings, winning over the
    environment's base URL of the credential. Its provider takes no key, neither the
    environment's nor a request's: any request may name its models, and the key of a
    credential belongs to that credential's provider (factory.py, `_local_session`)."""

    base_url: Callable[[AgentSettings], str]
    missing: str  # the error when neither names a base URL; `{model}` is the model id


# What each session module's `session` is.
SessionBuilder = Callable[[SessionConfig, ClientPool], ProviderSession]


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    id: str  # `ModelSpec.provider` and `Model.provider` in ListModels
    display_name: str  # in error texts, e.g. "Could not connect to OpenAI"
    credential: str  # id of the credential source it uses
    # Its session module, SDK and all: its `session(config, clients)` builds the session
    # for a config around an SDK client from the agent's pool (`ClientPool.session`).
    module: str
    models: tuple[ModelFamily, ...] = ()
    # Model ids for the variants when this provider's key is the only one (cycled).
    alone: tuple[str, ...] = ()
    # Model ids for video input, for the one provider that reads video.
    video: tuple[str, ...] = ()
    # A local provider runs `local:<name>` models on the operator's server (the
    # override's base URL) with no key, and is chosen when no key is present.
    override: EndpointOverride | None = None
    # Ids `<prefix><api name>` run any model of this provider by its API name, unlisted
    # and unpriced (`local:qwen3`, `openrouter:openai/gpt-oss-120b`).
    id_prefix: str = ""

    def session(self, config: SessionConfig, clients: ClientPool) -> ProviderSession:
        """The session for `config`, from the module's builder (imported on first use)."""
        build: SessionBuilder = importlib.import_module(self.module).session
        return build(config, clients)

    @property
    def local(self) -> bool:
        return self.override is not None

    @property
    def name(self) -> ProviderName:
        return ProviderName(self.display_name, BY_ID[self.credential].key_envs[0])


_EFFORTS = ("none", "low", "medium", "high", "xhigh")
_CLAUDE = ("low", "medium", "high", "xhigh", "max")
# Prices shared by several families: input, output, cache read, cache write.
_GPT = Price(2.50, 15.00, 0.25, 0.0)
_GPT_MINI = Price(0.40, 3.20, 0.10, 0.0)
_FLASH = Price(0.50, 3.00, 0.05, 0.0)
_PRO = Price(2.00, 12.00, 0.20, 0.0)

PROVIDERS: tuple[ProviderSpec, ...] = (
    ProviderSpec(
        "openai",
        "OpenAI",
        "openai",
        "services.agent.providers.openai_responses",
        models=(
            ModelFamily("gpt-5.4-mini", ("low",), "thinking", "effort", _GPT_MINI),
            ModelFamily("gpt-5.4-2026-03-05", _EFFORTS, "thinking", "effort", _GPT),
            ModelFamily("gpt-5.5", _EFFORTS, "thinking", "effort", _GPT),
            ModelFamily("gpt-5.6-sol", (*_EFFORTS, "max"), "thinking", "effort", _GPT),
            ModelFamily("gpt-5.6-terra", ("low",), "thinking", "effort", _GPT),
        ),
        alone=("gpt-5.5 (high thinking)", "gpt-5.5 (low thinking)"),
    ),
    ProviderSpec(
        "anthropic",
        "Anthropic",
        "anthropic",
        "services.agent.providers.anthropic",
        models=(
            ModelFamily("claude-sonnet-4-6", ("high",), price=Price(3.00, 15.00, 0.30, 3.75)),
            ModelFamily("claude-opus-4-8", _CLAUDE, "effort", price=Price(5.00, 25.00, 0.50, 6.25)),
            ModelFamily(
                "claude-fable-5", _CLAUDE, "effort", price=Price(10.00, 50.00, 1.00, 12.50)
            ),
        ),
        alone=("claude-opus-4-8 (medium effort)", "claude-sonnet-4-6"),
    ),
    ProviderSpec(
        "gemini",
        "Gemini",
        "gemini",
        "services.agent.providers.gemini",
        models=(
            ModelFamily("gemini-3-flash-preview", ("high", "minimal"), "thinking", price=_FLASH),
            ModelFamily(
                "gemini-3.1-pro-preview", ("high", "medium", "low"), "thinking", price=_PRO
            ),
            ModelFamily(
                "gemini-3.5-flash", ("high", "medium", "low", "minimal"), "thinking", price=_FLASH
            ),
        ),
        alone=(
            "gemini-3-flash-preview (minimal thinking)",
            "gemini-3.1-pro-preview (low thinking)",
            "gemini-3-flash-preview (high thinking)",
            "gemini-3.1-pro-preview (high thinking)",
        ),
        video=(
            "gemini-3-flash-preview (minimal thinking)",
            "gemini-3.1-pro-preview (high thinking)",
        ),
    ),
    # OpenRouter: its Responses API for the catalogue model (reasoning effort, output cap)
    # and its Chat Completions for any other model by id.
    ProviderSpec(
        "openrouter",
        "OpenRouter",
        "openrouter",
        "services.agent.providers.openai_responses",
        models=(
            ModelFamily(
                "moonshotai/kimi-k3",
                ("low",),
                "thinking",
                price=Price(3.00, 15.00, 0.30, 0.0),
                name="kimi-k3",
                max_output_tokens=20_000,
            ),
        ),
        alone=("kimi-k3 (low thinking)",),
    ),
    ProviderSpec(
        "openrouter-chat",
        "OpenRouter",
        "openrouter",
        "services.agent.providers.openai_chat",
        id_prefix="openrouter:",
    ),
    ProviderSpec(
        "openai-compatible",
        "OpenAI-compatible server",
        "openai",
        "services.agent.providers.openai_chat",
        override=EndpointOverride(
            lambda settings: settings.local_base_url,
            "Model {model} needs an OpenAI-compatible server: set S2C_LOCAL_BASE_URL "
            "(or OPENAI_BASE_URL), e.g. http://127.0.0.1:11434/v1 for Ollama.",
        ),
        id_prefix="local:",
    ),
)
_BY_ID: dict[str, ProviderSpec] = {spec.id: spec for spec in PROVIDERS}
# Each priced API model's price, by API name (clients' and benchmarks' look-up; the agent
# reads a model's own, ModelSpec.price).
PRICES: dict[str, Price] = {
    family.api_name: family.price
    for spec in PROVIDERS
    for family in spec.models
    if family.price is not None
}
# The providers a key brings into the variant plan (those with catalogue models).
KEYED: tuple[ProviderSpec, ...] = tuple(spec for spec in PROVIDERS if spec.models)
LOCAL: ProviderSpec = next(spec for spec in PROVIDERS if spec.local)
PREFIXED: tuple[ProviderSpec, ...] = tuple(spec for spec in PROVIDERS if spec.id_prefix)


@dataclass(frozen=True, slots=True)
class EndpointApi:
    """The wire format of a named endpoint of the models file (services/agent/endpoints.py):
    which session module speaks it, and the provider id its models report."""

    provider: str  # `ModelSpec.provider` and `Model.provider` of its models
    display_name: str
    module: str

    def session(self, config: SessionConfig, clients: ClientPool) -> ProviderSession:
        build: SessionBuilder = importlib.import_module(self.module).session
        return build(config, clients)


ENDPOINT_APIS: dict[str, EndpointApi] = {
    "chat": EndpointApi(
        "openai-compatible", "OpenAI-compatible server", "services.agent.providers.openai_chat"
    ),
    "responses": EndpointApi(
        "openai-responses", "OpenAI Responses server", "services.agent.providers.openai_responses"
    ),
    "azure": EndpointApi("azure", "Azure OpenAI", "services.agent.providers.azure"),
}


def get(provider_id: str) -> ProviderSpec:
    return _BY_ID[provider_id]


def key_envs() -> list[str]:
    """Every environment variable that gives a keyed provider its key (aliases too)."""
    names = [name for spec in KEYED for name in BY_ID[spec.credential].key_envs]
    return list(dict.fromkeys(names))


def key_envs_text() -> str:
    """The key variables a user may set, as a text names them: "A, B or C"."""
    names = list(dict.fromkeys(spec.name.key_env for spec in KEYED))
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]


def configured_modules(settings: AgentSettings) -> list[str]:
    """The session modules of the providers the settings give a key (or, for the local
    one, a base URL): the ones the agent imports before its heap is frozen (server.py,
    `startup_modules`).

    A process freezes its startup heap out of the cycle collector's view once it serves
    (grpc_server.freeze_startup_heap, which imports these first). An SDK imported after
    that stays in view: the openai SDK alone is ~520 modules and ~67 k objects, and with it
    in view every full collection of a loaded agent took 80-100 ms of CPU (bench/README.md,
    `gc_pause.py`), stalling every stream it serves. Providers without a configured key
    still load on first use (a request's own key).
    """
    wanted = [s.module for s in KEYED if settings.credentials.key(s.credential)]
    if LOCAL.override is not None and LOCAL.override.base_url(settings):
        wanted.append(LOCAL.module)
    wanted += [ENDPOINT_APIS[e.api].module for e in settings.endpoints]
    return list(dict.fromkeys(wanted))
