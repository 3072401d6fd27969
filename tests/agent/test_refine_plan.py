"""How many refinement rounds a plan gives each variant (planning.refine_rounds)."""

from __future__ import annotations

import pytest

from services.agent.domain import GenerationRequest, Prompt
from services.agent.planning import Planner
from services.agent.settings import AgentSettings
from services.common.errors import InvalidRequest
from tests.suite import png_data_url


def rounds(settings: AgentSettings, asked: int | None, images: bool = True) -> int:
    prompt = Prompt(images=(png_data_url(),)) if images else Prompt(text="a page")
    request = GenerationRequest("g", prompt=prompt, variant_count=1, refine_rounds=asked)
    return Planner(settings).plan(request).refine_rounds


def test_the_operators_default_the_requests_number_and_the_cap() -> None:
    settings = AgentSettings(refine_rounds=1, refine_max_rounds=3)
    assert rounds(settings, None) == 1
    assert rounds(settings, 0) == 0
    assert rounds(settings, 2) == 2
    assert rounds(settings, 9) == 3
    assert rounds(AgentSettings.from_env({"S2C_REFINE_ROUNDS": "2"}), None) == 2
    # Nothing to refine towards without a screenshot.
    assert rounds(settings, 2, images=False) == 0
    # An update asks for a change away from the screenshot: a round would undo it.
    update = GenerationRequest(
        "g", generation_type="update", prompt=Prompt(images=(png_data_url(),)), refine_rounds=2
    )
    assert Planner(settings).plan(update).refine_rounds == 0


def test_a_negative_number_is_refused() -> None:
    with pytest.raises(InvalidRequest) as refused:
        rounds(AgentSettings(), -1)
    assert [(v.field, v.description) for v in refused.value.violations] == [
        ("refine_rounds", "must be 0 or more")
    ]


def test_the_settings_read_the_environment() -> None:
    settings = AgentSettings.from_env(
        {"S2C_REFINE_TARGET": "0.8", "S2C_REFINE_ROUNDS": "0", "S2C_REFINE_MAX_ROUNDS": "5"}
    )
    assert (settings.refine_target, settings.refine_rounds, settings.refine_max_rounds) == (
        0.8,
        0,
        5,
    )
