"""The model catalogue and how variants get their models (docs/design.md).

A model id names a provider, the API model and an effort level. Ids of the form
`local:<name>` run `<name>` on an OpenAI-compatible Chat Completions server
(Ollama, vLLM, LM Studio, llama.cpp); `demo` is the built-in scripted model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from services.agent.providers import registry

DEMO_MODEL_ID = "demo"
LOCAL_PREFIX = "local:"


@dataclass(frozen=True, slots=True)
class ModelSpec:
    id: str
    provider: str  # a registry id, or "demo"
    api_name: str
    effort: str | None


def _family_specs(provider: str, family: registry.ModelFamily) -> list[ModelSpec]:
    if not family.unit:
        return [ModelSpec(family.api_name, provider, family.api_name, family.efforts[0])]
    return [
        ModelSpec(f"{family.api_name} ({e} {family.unit})", provider, family.api_name, e)
        for e in family.efforts
    ]


CATALOGUE: dict[str, ModelSpec] = {
    spec.id: spec
    for provider in registry.PROVIDERS
    for family in provider.models
    for spec in _family_specs(provider.id, family)
}
CATALOGUE[DEMO_MODEL_ID] = ModelSpec(DEMO_MODEL_ID, "demo", DEMO_MODEL_ID, None)

G3F_MIN = "gemini-3-flash-preview (minimal thinking)"
G3F_HIGH = "gemini-3-flash-preview (high thinking)"
G31P_LOW = "gemini-3.1-pro-preview (low thinking)"
G31P_HIGH = "gemini-3.1-pro-preview (high thinking)"
GPT55_HIGH = "gpt-5.5 (high effort)"
GPT55_LOW = "gpt-5.5 (low effort)"
GPT56_TERRA_LOW = "gpt-5.6-terra (low effort)"
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
        return CATALOGUE[model_id]
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
    pinned: Sequence[str] = (),
    local_models: Sequence[str] = (),
) -> list[ModelSpec]:
    """Models for `count` variants: pinned ones if any, else by the keys present
    (upstream's lists, cycled), else local models, else the demo model."""
    ids: Sequence[str]
    if pinned:
        ids = pinned
    elif input_mode == "video" and providers_with_keys:
        ids = _video_models(providers_with_keys)
    elif providers_with_keys:
        ids = _spread(generation_type, input_mode, providers_with_keys)
    elif local_models:
        ids = [f"{LOCAL_PREFIX}{name}" for name in local_models]
    else:
        ids = [DEMO_MODEL_ID]
    specs = [resolve(i) for i in ids]
    return [specs[i % len(specs)] for i in range(count)]


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
