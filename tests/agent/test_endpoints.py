"""The models file is read strictly at start; its models and OpenRouter's join the plan."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.agent.domain import GenerationRequest, Prompt
from services.agent.endpoints import ModelsFileError, parse
from services.agent.models import KIMI_LOW, ModelSelectionError, resolve, select_models
from services.agent.planning import Planner
from services.agent.settings import AgentSettings
from services.common.credentials import Credentials

GOOD = """\
[[endpoint]]
name = "ollama"                       # ids "ollama:<model id>"
api = "chat"
base_url = "http://127.0.0.1:11434/v1"
[[endpoint.model]]
id = "qwen3-vl:8b"
price_in = 0.0
price_out = 0.0
[[endpoint.model]]
id = "gemma3:1b"
vision = false
tools = false
"""


def test_the_issue_example_parses() -> None:
    [ollama] = parse(GOOD, {})
    assert (ollama.name, ollama.api, ollama.base_url) == (
        "ollama",
        "chat",
        "http://127.0.0.1:11434/v1",
    )
    assert [(m.id, m.vision, m.tools) for m in ollama.models] == [
        ("qwen3-vl:8b", True, True),
        ("gemma3:1b", False, False),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            GOOD.replace("tools = false", "tool = false"),
            r"line 12: endpoint\[0\]\.model\[1\]\.tool: unknown field",
        ),
        (
            GOOD.replace('api = "chat"', 'api = "grpc"'),
            r"line 3: endpoint\[0\]\.api: must be one of chat",
        ),
        (
            GOOD.replace("vision = false", 'vision = "no"'),
            r"line 11: endpoint\[0\]\.model\[1\]\.vision: must be true or false",
        ),
        (
            GOOD.replace("price_in = 0.0", "price_in = -1"),
            r"line 7: endpoint\[0\]\.model\[0\]\.price_in",
        ),
        (GOOD + 'colour = "red"\n', r"line 13: endpoint\[0\]\.model\[1\]\.colour: unknown field"),
        ("models = 1\n" + GOOD, r"line 1: models: unknown field"),
        (
            GOOD.replace('name = "ollama"', 'name = "openrouter"'),
            r"line 2: endpoint\[0\]\.name: 'openrouter' is reserved",
        ),
        (
            GOOD.replace('base_url = "http://127.0.0.1:11434/v1"', ""),
            r"line 1: endpoint\[0\]\.base_url: needs an http",
        ),
        (
            GOOD + GOOD,
            r"line 14: endpoint\[1\]\.name: a second endpoint",
        ),
        (
            GOOD.replace('id = "gemma3:1b"', 'id = "qwen3-vl:8b"'),
            r"line 10: endpoint\[0\]\.model\[1\]\.id: a second model",
        ),
        (GOOD.replace("[[endpoint.model]]", "[[endpoint.model]", 1), r"not valid TOML: .*line 5"),
        (
            GOOD.replace('api = "chat"', 'api = "chat"\napi_key_env = "OLLAMA_KEY"'),
            r"line 4: endpoint\[0\]\.api_key_env: names OLLAMA_KEY, which is not set",
        ),
        (
            GOOD.replace("price_in = 0.0", 'deployment = "d"'),
            r"line 7: endpoint\[0\]\.model\[0\]\.deployment: is for api = \"azure\" only",
        ),
    ],
)
def test_a_bad_file_names_its_line_and_field(text: str, expected: str) -> None:
    with pytest.raises(ModelsFileError, match=expected):
        parse(text, {}, "models.toml")


def test_azure_needs_a_version_and_a_key_unless_the_sdk_variables_give_them() -> None:
    text = '[[endpoint]]\nname = "az"\napi = "azure"\nbase_url = "https://r.openai.azure.com"\n'
    text += '[[endpoint.model]]\nid = "gpt-5.5"\n'
    with pytest.raises(
        ModelsFileError, match=r"api_version: is required \(or set OPENAI_API_VERSION\)"
    ):
        parse(text, {})
    with pytest.raises(ModelsFileError, match="names AZURE_OPENAI_API_KEY, which is not set"):
        parse(text, {"OPENAI_API_VERSION": "2024-10-21"})
    [az] = parse(text, {"OPENAI_API_VERSION": "2024-10-21", "AZURE_OPENAI_API_KEY": "k-1"})
    assert (az.api_version, az.api_key, az.models[0].api_name) == ("2024-10-21", "k-1", "gpt-5.5")
    assert "k-1" not in repr(az)


def test_the_agent_does_not_start_with_a_bad_file(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text(GOOD.replace("tools = false", "tool = false"))
    with pytest.raises(ModelsFileError, match=rf"{path}, line 12: .*tool: unknown field"):
        AgentSettings.from_env({"S2C_MODELS_FILE": str(path)})
    with pytest.raises(ModelsFileError, match="cannot read it"):
        AgentSettings.from_env({"S2C_MODELS_FILE": str(tmp_path / "missing.toml")})
    path.write_text(GOOD.replace('name = "ollama"', 'name = "local"'))
    with pytest.raises(ModelsFileError, match="S2C_LOCAL_MODELS both define"):
        AgentSettings.from_env({"S2C_MODELS_FILE": str(path), "S2C_LOCAL_MODELS": "a"})


def test_endpoint_ids_resolve_with_their_flags_and_unknown_ones_are_named() -> None:
    endpoints = parse(GOOD, {})
    spec = resolve("ollama:gemma3:1b", endpoints)
    assert (spec.provider, spec.api_name, spec.endpoint) == (
        "openai-compatible",
        "gemma3:1b",
        "ollama",
    )
    assert (spec.vision, spec.tools) == (False, False)
    with pytest.raises(ModelSelectionError, match="Endpoint ollama has qwen3-vl:8b, gemma3:1b"):
        resolve("ollama:llama3", endpoints)
    with pytest.raises(ModelSelectionError, match="Unknown model: ollama:gemma3:1b"):
        resolve("ollama:gemma3:1b")  # without the file


def ids(keys: set[str], generation_type: str = "create", count: int = 4) -> list[str]:
    chosen = select_models(
        generation_type=generation_type,
        input_mode="image",
        count=count,
        providers_with_keys=frozenset(keys),
    )
    return [s.id for s in chosen]


def test_an_openrouter_key_puts_kimi_first() -> None:
    assert ids({"openai", "anthropic", "gemini", "openrouter"}) == [
        "kimi-k3 (low thinking)",
        "claude-opus-4-8 (medium effort)",
        "gpt-5.5 (low thinking)",
        "gemini-3.1-pro-preview (high thinking)",
    ]
    assert ids({"openrouter"}, count=2) == [KIMI_LOW, KIMI_LOW]
    # A subset: Kimi, then that subset's list, cycled.
    assert ids({"openrouter", "openai"}) == [
        KIMI_LOW,
        "gpt-5.5 (high thinking)",
        "gpt-5.5 (low thinking)",
        KIMI_LOW,
    ]
    assert ids({"openrouter", "openai", "anthropic", "gemini"}, "update", 2) == [
        KIMI_LOW,
        "gemini-3-flash-preview (minimal thinking)",
    ]
    spec = resolve(KIMI_LOW)
    assert (spec.api_name, spec.effort, spec.max_output_tokens) == (
        "moonshotai/kimi-k3",
        "low",
        20_000,
    )
    assert spec.price is not None
    assert (spec.price.input, spec.price.output, spec.price.cache_read) == (3.0, 15.0, 0.30)


def test_the_plan_uses_the_keys_and_the_files_models(tmp_path: Path) -> None:
    env = {"OPENROUTER_API_KEY": "sk-or-1"}
    plan = Planner(AgentSettings(credentials=Credentials.from_env(env))).plan(
        GenerationRequest("", prompt=Prompt(text="a page"))
    )
    assert [m.id for m in plan.models] == [KIMI_LOW] * 4
    # With no key, the file's models run (cycled) rather than the demo model.
    path = tmp_path / "models.toml"
    path.write_text(GOOD)
    settings = AgentSettings.from_env({"S2C_MODELS_FILE": str(path)})
    plan = Planner(settings).plan(GenerationRequest("", prompt=Prompt(text="a page")))
    assert [m.id for m in plan.models] == ["ollama:qwen3-vl:8b", "ollama:gemma3:1b"] * 2
