"""`GET /api/models` lists what the agent runs, with what each model can take; the
`models` param pins a generation's models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest

from services.agent.settings import AgentSettings
from services.gateway.params import ParamsError, parse_params
from tests.suite import create_params, run_ws, running_suite

MODELS_FILE = """\
[[endpoint]]
name = "ollama"
base_url = "http://127.0.0.1:9/v1"
[[endpoint.model]]
id = "gemma3:1b"
vision = false
tools = false
"""


async def test_models_lists_the_catalogue_and_the_files_models(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text(MODELS_FILE)
    agent = AgentSettings.from_env({"S2C_MODELS_FILE": str(path), "S2C_DEMO_PACE_MS": "0"})
    async with running_suite(tmp_path, agent=agent) as suite:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{suite.http_url}/api/models") as response:
                assert response.status == 200
                body = await response.json()
        by_id: dict[str, dict[str, Any]] = {m["id"]: m for m in body["models"]}
        assert by_id["ollama:gemma3:1b"] == {
            "id": "ollama:gemma3:1b",
            "provider": "openai-compatible",
            "apiName": "gemma3:1b",
            "available": True,
            "vision": False,
            "tools": False,
            "video": False,
            "endpoint": "ollama",
            "credential": "",
        }
        kimi = by_id["kimi-k3 (low thinking)"]
        assert (kimi["credential"], kimi["available"], kimi["vision"]) == (
            "openrouter",
            False,
            True,
        )
        assert by_id["gemini-3.1-pro-preview (high thinking)"]["video"] is True
        assert by_id["demo"]["available"] is True
        # The stacks a request may name, as generatedCodeConfig takes them.
        assert body["stacks"][0] == "html_tailwind"
        assert body["stacks"][-1] == "react_vite"
        assert len(body["stacks"]) == 7

        # The param pins the variants' models (the demo model here: no server needed).
        result = await run_ws(suite.ws_url, create_params(models=["demo"]))
        [chosen] = [f for f in result.frames if f["type"] == "variantModels"]
        assert set(chosen["data"]["models"]) == {"demo"}
        assert result.close_code == 1000

        unknown = await run_ws(suite.ws_url, create_params(models=["nope:x"]))
        assert unknown.close_code == 4332
        assert any("Unknown model: nope:x" in f.get("value", "") for f in unknown.frames)


@pytest.mark.parametrize("value", ["demo", [1], [""], ["demo"] * 9])
def test_a_bad_models_param_names_the_field(value: Any) -> None:
    with pytest.raises(ParamsError, match="Invalid params: models must be a list"):
        parse_params(create_params(models=value), asset_base_url="")
