"""Image input and models that read none (vision = false), as the planner decides it:
refused before any model request, the error naming the model and the readers."""

from __future__ import annotations

import pytest

from services.agent.domain import GenerationRequest, HistoryMessage, Prompt
from services.agent.endpoints import EndpointModel, ModelEndpoint
from services.agent.planning import Planner
from services.agent.settings import AgentSettings
from services.common.errors import InvalidRequest

IMAGE = "data:image/png;base64,iVBORw0KGgo="
OLLAMA = ModelEndpoint(
    "ollama",
    "chat",
    "http://127.0.0.1:9/v1",
    models=(
        EndpointModel("text-coder", vision=False, tools=False),
        EndpointModel("qwen3-vl"),
    ),
)
BLIND_ONLY = ModelEndpoint(
    "ollama", "chat", "http://127.0.0.1:9/v1", models=(EndpointModel("text-coder", vision=False),)
)


def test_unpinned_pictures_go_only_to_the_models_that_read_them() -> None:
    planner = Planner(AgentSettings(endpoints=(OLLAMA,)))
    with_image = planner.plan(GenerationRequest("g", prompt=Prompt(images=(IMAGE,))))
    assert [m.id for m in with_image.models] == ["ollama:qwen3-vl"] * 4
    # A picture in the history (an update of a screenshot's page) counts as well.
    update = GenerationRequest(
        "g", history=(HistoryMessage("user", "this", images=(IMAGE,)),), variant_count=2
    )
    assert [m.id for m in planner.plan(update).models] == ["ollama:qwen3-vl"] * 2
    text = planner.plan(GenerationRequest("g", prompt=Prompt(text="a page"), variant_count=2))
    assert [m.id for m in text.models] == ["ollama:text-coder", "ollama:qwen3-vl"]


def test_with_no_reader_configured_the_generation_is_refused_before_any_request() -> None:
    planner = Planner(AgentSettings(endpoints=(BLIND_ONLY,)))
    plan = planner.plan(GenerationRequest("g", prompt=Prompt(images=(IMAGE,))))
    assert plan.models == ()
    assert plan.refusal == (
        "Model ollama:text-coder reads no images (vision = false); no model configured "
        "here reads images; use a catalogue model (ListModels)"
    )


def test_a_model_pinned_by_s2c_models_is_refused_pictures_on_the_prompts_field() -> None:
    settings = AgentSettings(endpoints=(OLLAMA,), pinned_models=("ollama:text-coder",))
    with pytest.raises(InvalidRequest) as caught:
        Planner(settings).plan(GenerationRequest("g", prompt=Prompt(images=(IMAGE,))))
    [violation] = caught.value.violations
    assert violation.field == "prompt.images"
    assert violation.description == (
        "Model ollama:text-coder reads no images (vision = false); models configured here "
        "that read images: ollama:qwen3-vl (pinned by S2C_MODELS)"
    )
    # Text alone is what it reads: planned as pinned.
    plan = Planner(settings).plan(GenerationRequest("g", prompt=Prompt(text="a page")))
    assert [m.id for m in plan.models] == ["ollama:text-coder"] * 4
