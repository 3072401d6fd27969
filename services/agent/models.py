"""The model catalogue and how variants get their models (docs/design.md).

A model id names a provider, the API model and an effort level, spelled as upstream's
`Llm` values (the upstream UI keys its badges on them). Ids of the form
`local:<name>` run `<name>` on an OpenAI-compatible Chat Completions server
(Ollama, vLLM, LM Studio, llama.cpp); `demo` is the built-in scripted model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from services.agent.domain import GenerationRequest
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

    @property
    def priced(self) -> bool:
        """Whether its cost is known (a 0 cost of an unpriced model is not $0)."""
        return self.price is not None


def _family_specs(provider: str, family: registry.ModelFamily) -> list[ModelSpec]:
    if not family.unit:
        return [
            ModelSpec(family.api_name, provider, family.api_name, family.efforts[0], family.price)
        ]
    return [
        ModelSpec(_family_id(family, e, family.unit), provider, family.api_name, e, family.price)
        for e in family.efforts
    ]


def _family_id(family: registry.ModelFamily, effort: str, unit: str) -> str:
    return f"{family.api_name} ({'no' if effort == 'none' else effort} {unit})"


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

# Upstream's spreads over its three providers, by the keys present; a set of keys
# not listed here (one that includes a provider upstream lacks) gets the `alone` lists
# of its providers, in registry order. One key alone always gets its provider's list.
_UPSTREAM = frozenset({"openai", "anthropic", "gemini"})
ALL_KEYS_TEXT_CREATE = (G3F_MIN, GPT55_HIGH, OPUS_HIGH, G31P_LOW)
ALL_KEYS_UPDATE = (G3F_MIN, GPT56_TERRA_LOW)
ALL_KEYS_DEFAULT = (OPUS_MED, GPT55_LOW, G3F_HIGH, G31P_HIGH)
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


def resolve(model_id: str) -> ModelSpec:
    """The spec for `model_id`; raises ModelSelectionError for unknown ids."""
    if model_id.startswith(LOCAL_PREFIX) and len(model_id) > len(LOCAL_PREFIX):
        return ModelSpec(model_id, registry.LOCAL.id, model_id[len(LOCAL_PREFIX) :], None)
    try:
        return CATALOGUE.get(model_id) or ALIASES[model_id]
    except KeyError:
        shown = model_id if len(model_id) <= 100 else model_id[:100] + "…"
        raise ModelSelectionError(
            f"Unknown model: {shown}. Use ListModels for the ids, or local:<name> for an "
            "OpenAI-compatible server."
        ) from None


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
    has_video: bool = False,
) -> list[ModelSpec]:
    """Models for `count` variants: pinned ones if any, else by the keys present
    (upstream's lists, cycled), else local models, else the demo model.

    Video (the mode, or any video in the input) goes only to models that read it:
    unpinned, it picks the video models as upstream does; a pinned model that would
    drop it is refused rather than told to "analyze this video" it never gets."""
    video = input_mode == "video" or has_video
    if pinned:
        if has_video:
            for spec in pinned:
                if not takes_video(spec):
                    raise ModelSelectionError(no_video(spec.id))
        return [pinned[i % len(pinned)] for i in range(count)]
    ids: Sequence[str]
    if video and (providers_with_keys or local_models):
        ids = _video_models(providers_with_keys)
    elif providers_with_keys:
        ids = _spread(generation_type, input_mode, providers_with_keys)
    elif local_models:
        ids = [f"{LOCAL_PREFIX}{name}" for name in local_models]
    else:
        ids = [DEMO_MODEL_ID]
    specs = [resolve(i) for i in ids]
    return [specs[i % len(specs)] for i in range(count)]


def takes_video(spec: ModelSpec) -> bool:
    """Whether the model reads video input. The demo model reads no input at all and
    says so in its status line, so video costs it nothing it could pretend to use."""
    return spec.provider == DEMO_MODEL_ID or bool(registry.get(spec.provider).video)


def has_video(request: GenerationRequest) -> bool:
    return bool(request.prompt.videos) or any(m.videos for m in request.history)


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
    if keys == _UPSTREAM:
        if generation_type == "update":
            return ALL_KEYS_UPDATE
        return ALL_KEYS_TEXT_CREATE if input_mode == "text" else ALL_KEYS_DEFAULT
    if keys in _PAIRS:
        return _PAIRS[keys]
    return tuple(m for p in registry.KEYED if p.id in keys for m in p.alone)
