"""Scores only for a socket that shows them (`scoreFidelity`, docs/fidelity.md): the
upstream UI's socket asks the agent for none and closes at its last `variantComplete`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from services.gateway.params import ParamsError, asks_for_scores
from tests.suite import create_params, run_ws, running_suite


@pytest.mark.parametrize(("value", "asked"), [(None, False), (False, False), (True, True)])
def test_score_fidelity_values(value: bool | None, asked: bool) -> None:
    assert asks_for_scores({} if value is None else {"scoreFidelity": value}) is asked


@pytest.mark.parametrize(("value", "shown"), [("true", "a string"), (1, "a number")])
def test_a_score_fidelity_that_is_not_a_boolean_names_the_field(value: Any, shown: str) -> None:
    with pytest.raises(ParamsError) as caught:
        asks_for_scores({"scoreFidelity": value})
    assert str(caught.value) == f"Invalid params: scoreFidelity must be a boolean, got {shown}"


async def test_only_the_socket_that_asks_gets_its_generation_scored(tmp_path: Path) -> None:
    async with running_suite(tmp_path) as suite:
        upstream = await run_ws(suite.ws_url, create_params())
        ours = await run_ws(suite.ws_url, create_params(scoreFidelity=True))
        refused = await run_ws(suite.ws_url, create_params(scoreFidelity="yes"))
        appends = await run_ws(suite.ws_url, create_params(codeStream="append"))
        generations = suite.agent.manager.generations()
    assert [g.request.score_fidelity for g in generations] == [False, True, False]
    # setCode sockets get their code in the batches they show (docs/architecture.md,
    # "Code batches"); an appendCode socket shows every delta.
    assert [g.request.code_batch_chars for g in generations] == [40, 40, 0]
    assert appends.close_code == 1000
    for result in (upstream, ours):
        assert result.close_code == 1000
        assert result.frames[-1]["type"] == "variantComplete"
    assert refused.close_code == 4332
    assert refused.frames == [
        {"type": "error", "value": "Invalid params: scoreFidelity must be a boolean, got a string"}
    ]
