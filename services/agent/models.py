"""The model catalogue and how variants get their models (docs/design.md).

A model id names a provider, the API model and an effort level. Ids of the form
`local:<name>` run `<name>` on an OpenAI-compatible Chat Completions server
(Ollama, vLLM, LM Studio, llama.cpp); `demo` is the built-in scripted model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Provider = Literal["openai", "anthropic", "gemini", "openai-compatible", "demo"]

DEMO_MODEL_ID = "demo"
LOCAL_PREFIX = "local:"


@dataclass(frozen=True, slots=True)
class ModelSpec:
    id: str
    provider: Provider
    api_name: str
    effort: str | None


def _efforts(
    provider: Provider, api_name: str, efforts: Sequence[str], unit: str
) -> list[ModelSpec]:
    return [ModelSpec(f"{api_name} ({e} {unit})", provider, api_name, e) for e in efforts]


CATALOGUE: dict[str, ModelSpec] = {
    spec.id: spec
    for spec in [
        *_efforts("openai", "gpt-5.4-mini", ["low"], "effort"),
        *_efforts(
            "openai", "gpt-5.4-2026-03-05", ["none", "low", "medium", "high", "xhigh"], "effort"
        ),
        *_efforts("openai", "gpt-5.5", ["none", "low", "medium", "high", "xhigh"], "effort"),
        *_efforts(
            "openai", "gpt-5.6-sol", ["none", "low", "medium", "high", "xhigh", "max"], "effort"
        ),
        *_efforts("openai", "gpt-5.6-terra", ["low"], "effort"),
        ModelSpec("claude-sonnet-4-6", "anthropic", "claude-sonnet-4-6", "high"),
        *_efforts(
            "anthropic", "claude-opus-4-8", ["low", "medium", "high", "xhigh", "max"], "effort"
        ),
        *_efforts(
            "anthropic", "claude-fable-5", ["low", "medium", "high", "xhigh", "max"], "effort"
        ),
        *_efforts("gemini", "gemini-3-flash-preview", ["high", "minimal"], "thinking"),
        *_efforts("gemini", "gemini-3.1-pro-preview", ["high", "medium", "low"], "thinking"),
        *_efforts("gemini", "gemini-3.5-flash", ["high", "medium", "low", "minimal"], "thinking"),
        ModelSpec(DEMO_MODEL_ID, "demo", DEMO_MODEL_ID, None),
    ]
}

G3F_MIN = "gemini-3-flash-preview (minimal thinking)"
G3F_HIGH = "gemini-3-flash-preview (high thinking)"
G31P_LOW = "gemini-3.1-pro-preview (low thinking)"
G31P_HIGH = "gemini-3.1-pro-preview (high thinking)"
GPT55_HIGH = "gpt-5.5 (high effort)"
GPT55_LOW = "gpt-5.5 (low effort)"
GPT56_TERRA_LOW = "gpt-5.6-terra (low effort)"
OPUS_MED = "claude-opus-4-8 (medium effort)"
OPUS_HIGH = "claude-opus-4-8 (high effort)"
SONNET = "claude-sonnet-4-6"

ALL_KEYS_TEXT_CREATE = (G3F_MIN, GPT55_HIGH, OPUS_HIGH, G31P_LOW)
ALL_KEYS_UPDATE = (G3F_MIN, GPT56_TERRA_LOW)
ALL_KEYS_DEFAULT = (OPUS_MED, GPT55_LOW, G3F_HIGH, G31P_HIGH)
VIDEO_MODELS = (G3F_MIN, G31P_HIGH)
_BY_KEYS: dict[frozenset[str], tuple[str, ...]] = {
    frozenset({"gemini", "anthropic"}): (G3F_MIN, G31P_LOW, OPUS_MED, G3F_HIGH, G31P_HIGH),
    frozenset({"gemini", "openai"}): (G3F_MIN, G31P_LOW, GPT55_HIGH, GPT55_LOW),
    frozenset({"openai", "anthropic"}): (OPUS_MED, GPT55_HIGH, GPT55_LOW),
    frozenset({"gemini"}): (G3F_MIN, G31P_LOW, G3F_HIGH, G31P_HIGH),
    frozenset({"anthropic"}): (OPUS_MED, SONNET),
    frozenset({"openai"}): (GPT55_HIGH, GPT55_LOW),
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
        return ModelSpec(model_id, "openai-compatible", model_id[len(LOCAL_PREFIX) :], None)
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
        if "gemini" not in providers_with_keys:
            raise ModelSelectionError(
                "Video mode requires a Gemini API key. Add it in the settings dialog or set "
                "GEMINI_API_KEY."
            )
        ids = VIDEO_MODELS
    elif providers_with_keys >= {"openai", "anthropic", "gemini"}:
        if generation_type == "update":
            ids = ALL_KEYS_UPDATE
        elif input_mode == "text":
            ids = ALL_KEYS_TEXT_CREATE
        else:
            ids = ALL_KEYS_DEFAULT
    elif providers_with_keys:
        ids = _BY_KEYS[providers_with_keys & {"openai", "anthropic", "gemini"}]
    elif local_models:
        ids = [f"{LOCAL_PREFIX}{name}" for name in local_models]
    else:
        ids = [DEMO_MODEL_ID]
    specs = [resolve(i) for i in ids]
    return [specs[i % len(specs)] for i in range(count)]
