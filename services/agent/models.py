"""The model catalogue and how variants get their models (docs/design.md).

A model id names a provider, the API model and an effort level, spelled as upstream's
`Llm` values (the upstream UI keys its badges on them). Ids of the form
`local:<name>` run `<name>` on an OpenAI-compatible Chat Completions server
(Ollama, vLLM, LM Studio, llama.cpp), `openrouter:<vendor>/<model>` any OpenRouter
model, `<endpoint>:<model>` a model of the models file's endpoint (endpoints.py,
docs/models.md); `demo` is the built-in scripted model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from services.agent.domain import GenerationRequest
from services.agent.endpoints import EndpointModel, ModelEndpoint
from services.agent.pricing import Price
from services.agent.providers import registry

DEMO_MODEL_ID = "demo"
LOCAL_PREFIX = "local:"


@dataclass(frozen=True, slots=True)
class ModelSpec:
    id: str
    provider: str  # a registry id, or "demo"
    api_name: str
    effort: str | None
    price: Price | None = None  # its family's (registry.py); None: unpriced
    # What the model can take: False for a model that reads no images (refused image
    # input) or calls no tools (text mode: the page comes in one fenced block).
    vision: bool = True
    tools: bool = True
    # The cap on a turn's output tokens; None: the session's default.
    max_output_tokens: int | None = None
    # The models file's endpoint that serves it ("": a provider of the registry).
    endpoint: str = ""

    @property
    def priced(self) -> bool:
        """Whether its cost is known (a 0 cost of an unpriced model is not $0)."""
        return self.price is not None


def _family_specs(provider: str, family: registry.ModelFamily) -> list[ModelSpec]:
    efforts = family.efforts if family.unit else family.efforts[:1]
    return [
        ModelSpec(
            _family_id(family, e, family.unit),
            provider,
            family.api_name,
            e,
            family.price,
            max_output_tokens=family.max_output_tokens,
        )
        for e in efforts
    ]


def _family_id(family: registry.ModelFamily, effort: str, unit: str) -> str:
    name = family.name or family.api_name
    return f"{name} ({'no' if effort == 'none' else effort} {unit})" if unit else name


CATALOGUE: dict[str, ModelSpec] = {
    spec.id: spec
    for provider in registry.PROVIDERS
    for family in provider.models
    for spec in _family_specs(provider.id, family)
}
CATALOGUE[DEMO_MODEL_ID] = ModelSpec(DEMO_MODEL_ID, "demo", DEMO_MODEL_ID, None)
# Ids we used before taking upstream's spelling (`gpt-5.5 (high effort)`): accepted
# when pinned, answered with the canonical spec, never listed.
ALIASES: dict[str, ModelSpec] = {
    f"{family.api_name} ({e} {family.legacy_unit})": CATALOGUE[_family_id(family, e, family.unit)]
    for provider in registry.PROVIDERS
    for family in provider.models
    if family.legacy_unit
    for e in family.efforts
}

G3F_MIN = "gemini-3-flash-preview (minimal thinking)"
G3F_HIGH = "gemini-3-flash-preview (high thinking)"
G31P_LOW = "gemini-3.1-pro-preview (low thinking)"
G31P_HIGH = "gemini-3.1-pro-preview (high thinking)"
GPT55_HIGH = "gpt-5.5 (high thinking)"
GPT55_LOW = "gpt-5.5 (low thinking)"
GPT56_TERRA_LOW = "gpt-5.6-terra (low thinking)"
OPUS_MED = "claude-opus-4-8 (medium effort)"
OPUS_HIGH = "claude-opus-4-8 (high effort)"
KIMI_LOW = "kimi-k3 (low thinking)"

# Upstream's spreads over its three providers, by the keys present; a set of keys
# not listed here (one that includes a provider upstream lacks) gets the `alone` lists
# of its providers, in registry order. One key alone always gets its provider's list.
_UPSTREAM = frozenset({"openai", "anthropic", "gemini"})
ALL_KEYS_TEXT_CREATE = (G3F_MIN, GPT55_HIGH, OPUS_HIGH, G31P_LOW)
ALL_KEYS_UPDATE = (G3F_MIN, GPT56_TERRA_LOW)
ALL_KEYS_DEFAULT = (OPUS_MED, GPT55_LOW, G3F_HIGH, G31P_HIGH)
# With an OpenRouter key as well, upstream's staged create list puts Kimi first; with any
# other set of keys Kimi is prepended to that set's list.
ALL_KEYS_KIMI_CREATE = (KIMI_LOW, OPUS_MED, GPT55_LOW, G31P_HIGH)
_OPENROUTER = "openrouter"
_PAIRS: dict[frozenset[str], tuple[str, ...]] = {
    frozenset({"gemini", "anthropic"}): (G3F_MIN, G31P_LOW, OPUS_MED, G3F_HIGH, G31P_HIGH),
    frozenset({"gemini", "openai"}): (G3F_MIN, G31P_LOW, GPT55_HIGH, GPT55_LOW),
    frozenset({"openai", "anthropic"}): (OPUS_MED, GPT55_HIGH, GPT55_LOW),
}

NUM_VARIANTS = 4
NUM_VARIANTS_UPDATE = 2
NUM_VARIANTS_VIDEO = 2
MAX_VARIANTS = 8


class ModelSelectionError(ValueError):
    pass


def _shown(model_id: str) -> str:
    return model_id if len(model_id) <= 100 else model_id[:100] + "…"


def resolve(model_id: str, endpoints: Sequence[ModelEndpoint] = ()) -> ModelSpec:
    """The spec for `model_id`, with the models file's `endpoints`; raises
    ModelSelectionError for unknown ids."""
    name, colon, rest = model_id.partition(":")
    if colon and rest:
        endpoint = next((e for e in endpoints if e.name == name), None)
        if endpoint is not None:
            model = endpoint.model(rest)
            if model is None:
                known = ", ".join(m.id for m in endpoint.models)
                raise ModelSelectionError(
                    f"Unknown model: {_shown(model_id)}. Endpoint {name} has {known}."
                )
            return endpoint_spec(endpoint, model)
        for provider in registry.PREFIXED:
            if model_id.startswith(provider.id_prefix):
                return ModelSpec(model_id, provider.id, rest, None)
    try:
        return CATALOGUE.get(model_id) or ALIASES[model_id]
    except KeyError:
        raise ModelSelectionError(
            f"Unknown model: {_shown(model_id)}. Use ListModels for the ids, local:<name> for "
            "an OpenAI-compatible server or openrouter:<vendor>/<model> for OpenRouter."
        ) from None


def endpoint_spec(endpoint: ModelEndpoint, model: EndpointModel) -> ModelSpec:
    """A models-file model as the agent runs it. A price given for one direction only
    prices the other at 0; cached input is charged as input (the file has no cache price)."""
    price = None
    if model.price_in is not None or model.price_out is not None:
        price_in = model.price_in or 0.0
        price = Price(price_in, model.price_out or 0.0, price_in, 0.0)
    return ModelSpec(
        f"{endpoint.name}:{model.id}",
        registry.ENDPOINT_APIS[endpoint.api].provider,
        model.api_name,
        None,
        price,
        vision=model.vision,
        tools=model.tools,
        endpoint=endpoint.name,
    )


def endpoint_specs(endpoints: Sequence[ModelEndpoint]) -> list[ModelSpec]:
    """Every model of the models file, in its order."""
    return [endpoint_spec(e, m) for e in endpoints for m in e.models]


def variant_count(generation_type: str, input_mode: str, requested: int) -> int:
    if requested > 0:
        return min(requested, MAX_VARIANTS)
    if input_mode == "video":
        return NUM_VARIANTS_VIDEO
    return NUM_VARIANTS_UPDATE if generation_type == "update" else NUM_VARIANTS


def select_models(
    *,
    generation_type: str,
    input_mode: str,
    count: int,
    providers_with_keys: frozenset[str],
    pinned: Sequence[ModelSpec] = (),
    local_models: Sequence[str] = (),
    endpoint_models: Sequence[ModelSpec] = (),
    has_video: bool = False,
    has_images: bool = False,
) -> list[ModelSpec]:
    """Models for `count` variants: pinned ones if any, else by the keys present
    (upstream's lists, cycled), else local models and the models file's, else the demo
    model.

    Video (the mode, or any video in the input) goes only to models that read it:
    unpinned, it picks the video models as upstream does; a pinned model that would
    drop it is refused rather than told to "analyze this video" it never gets."""
    video = input_mode == "video" or has_video
    if pinned:
        for spec in pinned:
            if has_video and not takes_video(spec):
                raise ModelSelectionError(no_video(spec.id))
            if has_images and not spec.vision:
                raise ModelSelectionError(no_images(spec.id, ()))
        return [pinned[i % len(pinned)] for i in range(count)]
    specs: list[ModelSpec]
    if video and (providers_with_keys or local_models or endpoint_models):
        specs = [resolve(i) for i in _video_models(providers_with_keys)]
    elif providers_with_keys:
        specs = [resolve(i) for i in _spread(generation_type, input_mode, providers_with_keys)]
    elif local_models or endpoint_models:
        specs = [resolve(f"{LOCAL_PREFIX}{name}") for name in local_models]
        specs += endpoint_models
    else:
        specs = [resolve(DEMO_MODEL_ID)]
    if has_images:
        # Unpinned, pictures go only to the models that read them.
        readers = [s for s in specs if s.vision]
        if not readers:
            raise ModelSelectionError(no_images(specs[0].id, ()))
        specs = readers
    return [specs[i % len(specs)] for i in range(count)]


def takes_video(spec: ModelSpec) -> bool:
    """Whether the model reads video input. The demo model reads no input at all and
    says so in its status line, so video costs it nothing it could pretend to use."""
    if spec.provider == DEMO_MODEL_ID:
        return True
    return not spec.endpoint and bool(registry.get(spec.provider).video)


def has_video(request: GenerationRequest) -> bool:
    return bool(request.prompt.videos) or any(m.videos for m in request.history)


def has_images(request: GenerationRequest) -> bool:
    """Whether the request carries pictures for the model: images, or video (frames)."""
    prompt = request.prompt
    return bool(prompt.images or prompt.videos) or any(
        m.images or m.videos for m in request.history
    )


def no_images(model_id: str, readers: Sequence[str]) -> str:
    """The refusal of image input to a model that reads none, naming the models that
    would read it (`readers`, the agent's configured ones; empty: none is)."""
    if readers:
        shown = ", ".join(readers[:6]) + (", …" if len(readers) > 6 else "")
        where = f"models configured here that read images: {shown}"
    else:
        where = "no model configured here reads images; use a catalogue model (ListModels)"
    return f"Model {model_id} reads no images (vision = false); {where}"


def no_video(model_id: str) -> str:
    readers = " or ".join(m for p in registry.KEYED for m in p.video)
    return f"Model {model_id} takes no video input; video needs a Gemini model, e.g. {readers}"


def _video_models(keys: frozenset[str]) -> tuple[str, ...]:
    readers = [p for p in registry.KEYED if p.video]
    for provider in readers:
        if provider.id in keys:
            return provider.video
    names = " or ".join(p.display_name for p in readers)
    envs = " or ".join(p.name.key_env for p in readers)
    raise ModelSelectionError(
        f"Video mode requires a {names} API key. Add it in the settings dialog or set {envs}."
    )


def _spread(generation_type: str, input_mode: str, keys: frozenset[str]) -> tuple[str, ...]:
    if _OPENROUTER in keys:
        rest = keys - {_OPENROUTER}
        if rest == _UPSTREAM and generation_type != "update":
            return ALL_KEYS_KIMI_CREATE
        return (KIMI_LOW, *_spread(generation_type, input_mode, rest)) if rest else (KIMI_LOW,)
    if keys == _UPSTREAM:
        if generation_type == "update":
            return ALL_KEYS_UPDATE
        return ALL_KEYS_TEXT_CREATE if input_mode == "text" else ALL_KEYS_DEFAULT
    if keys in _PAIRS:
        return _PAIRS[keys]
    return tuple(m for p in registry.KEYED if p.id in keys for m in p.alone)


@dataclass(frozen=True, slots=True)
class Listed:
    """A model as ListModels shows it."""

    spec: ModelSpec
    available: bool  # its key (or server) is configured
    credential: str  # the credential source of its key; "": it takes none from requests

    @property
    def video(self) -> bool:
        return self.spec.provider != DEMO_MODEL_ID and takes_video(self.spec)


def listing(
    keys: frozenset[str], local_models: Sequence[str], endpoints: Sequence[ModelEndpoint]
) -> list[Listed]:
    """Every model a request may name, `keys` being the providers with a key: the
    catalogue, then the local and the models file's models (always available)."""
    out = [
        Listed(
            spec,
            spec.provider == DEMO_MODEL_ID or spec.provider in keys,
            "" if spec.provider == DEMO_MODEL_ID else registry.get(spec.provider).credential,
        )
        for spec in CATALOGUE.values()
    ]
    out += [Listed(resolve(f"{LOCAL_PREFIX}{name}"), True, "") for name in local_models]
    out += [Listed(spec, True, "") for spec in endpoint_specs(endpoints)]
    return out
