"""The catalogue speaks upstream's model ids; old ids stay accepted; video routing."""

from __future__ import annotations

import pytest

from services.agent import models
from services.agent.domain import GenerationRequest, HistoryMessage, Prompt
from services.agent.models import ModelSelectionError, resolve, select_models
from services.agent.planning import Planner
from services.agent.settings import AgentSettings
from services.common.errors import FieldViolation, InvalidRequest

# Upstream's `Llm` values (the strings its UI shows and keys badges on), in its order.
UPSTREAM_LLM = [
    "gpt-5.4-mini (low thinking)",
    *(f"gpt-5.4-2026-03-05 ({e} thinking)" for e in ("no", "low", "medium", "high", "xhigh")),
    *(f"gpt-5.5 ({e} thinking)" for e in ("no", "low", "medium", "high", "xhigh")),
    *(f"gpt-5.6-sol ({e} thinking)" for e in ("no", "low", "medium", "high", "xhigh", "max")),
    "gpt-5.6-terra (low thinking)",
    "claude-sonnet-4-6",
    *(f"claude-opus-4-8 ({e} effort)" for e in ("low", "medium", "high", "xhigh", "max")),
    *(f"claude-fable-5 ({e} effort)" for e in ("low", "medium", "high", "xhigh", "max")),
    "gemini-3-flash-preview (high thinking)",
    "gemini-3-flash-preview (minimal thinking)",
    *(f"gemini-3.1-pro-preview ({e} thinking)" for e in ("high", "medium", "low")),
    *(f"gemini-3.5-flash ({e} thinking)" for e in ("high", "medium", "low", "minimal")),
    "kimi-k3 (low thinking)",  # staged upstream: OpenRouter's Kimi K3
]


def test_the_catalogue_is_upstreams_llm_enum_plus_the_demo_model() -> None:
    assert list(models.CATALOGUE) == [*UPSTREAM_LLM, "demo"]


@pytest.mark.parametrize(
    ("old", "new", "effort"),
    [
        ("gpt-5.5 (high effort)", "gpt-5.5 (high thinking)", "high"),
        ("gpt-5.5 (none effort)", "gpt-5.5 (no thinking)", "none"),
        ("gpt-5.6-terra (low effort)", "gpt-5.6-terra (low thinking)", "low"),
        ("gpt-5.6-sol (max effort)", "gpt-5.6-sol (max thinking)", "max"),
    ],
)
def test_old_openai_ids_resolve_to_upstreams(old: str, new: str, effort: str) -> None:
    spec = resolve(old)
    assert (spec.id, spec.effort) == (new, effort)
    assert old not in models.CATALOGUE  # accepted, never listed


def test_an_unknown_id_is_still_refused() -> None:
    with pytest.raises(ModelSelectionError, match=r"Unknown model: gpt-5\.5 \(high\)"):
        resolve("gpt-5.5 (high)")


def ids(**kwargs: object) -> list[str]:
    defaults: dict[str, object] = {"generation_type": "create", "input_mode": "image", "count": 2}
    if "pinned" in kwargs:  # the planner resolves pinned ids before it selects
        kwargs["pinned"] = [resolve(model_id) for model_id in kwargs["pinned"]]  # type: ignore[attr-defined]
    return [s.id for s in select_models(**{**defaults, **kwargs})]  # type: ignore[arg-type]


def test_a_pinned_model_that_would_drop_the_video_is_refused() -> None:
    with pytest.raises(ModelSelectionError) as caught:
        ids(pinned=["claude-sonnet-4-6"], providers_with_keys=frozenset(), has_video=True)
    assert str(caught.value).startswith(
        "Model claude-sonnet-4-6 takes no video input; video needs a Gemini model"
    )
    pinned = ["gemini-3.5-flash (low thinking)"]
    assert ids(pinned=pinned, providers_with_keys=frozenset(), has_video=True) == pinned * 2


def test_unpinned_video_goes_to_gemini_or_asks_for_its_key() -> None:
    keys = frozenset({"openai", "gemini"})
    assert ids(input_mode="video", providers_with_keys=keys) == [
        "gemini-3-flash-preview (minimal thinking)",
        "gemini-3.1-pro-preview (high thinking)",
    ]
    # Video in an image-mode request's history goes the same way.
    assert ids(providers_with_keys=keys, has_video=True) == ids(
        input_mode="video", providers_with_keys=keys
    )
    for kwargs in (
        {"providers_with_keys": frozenset({"openai"})},
        {"providers_with_keys": frozenset(), "local_models": ["llama3.2"]},
    ):
        with pytest.raises(ModelSelectionError, match="Video mode requires a Gemini API key"):
            ids(input_mode="video", **kwargs)
    assert ids(input_mode="video", providers_with_keys=frozenset()) == ["demo", "demo"]


def test_video_violations_name_the_field_that_pinned_the_model() -> None:
    video = "data:video/mp4;base64,AAAA"
    with_video = GenerationRequest(
        "g",
        history=(HistoryMessage("user", "this", videos=(video,)),),
        models=("gemini-3-flash-preview (high thinking)", "gpt-5.5 (low effort)"),
    )
    [violation] = violations(Planner(AgentSettings()), with_video)
    assert violation.field == "models[1]"
    assert violation.description.startswith("Model gpt-5.5 (low effort) takes no video input")
    configured = GenerationRequest("g", prompt=Prompt(videos=(video,)))
    pinned = Planner(AgentSettings(pinned_models=("local:llama3.2", "nonsense")))
    [violation] = violations(pinned, configured)
    assert violation.field == "prompt.videos"
    assert violation.description.endswith("(pinned by S2C_MODELS)")
    local = Planner(AgentSettings(pinned_models=("local:llama3.2",)))
    assert local.plan(GenerationRequest("g")).models[0].id == "local:llama3.2"


def violations(planner: Planner, request: GenerationRequest) -> list[FieldViolation]:
    with pytest.raises(InvalidRequest) as caught:
        planner.plan(request)
    return caught.value.violations
