"""OpenRouter, Azure OpenAI and the models file's endpoints, each through the agent's own
path (model id → plan → session factory → SDK) against a fake speaking that service's
URL layout, auth header and error bodies."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from services.agent.domain import GenerationRequest
from services.agent.models import resolve
from services.agent.planning import Planner
from services.agent.providers.base import (
    AssistantDelta,
    PromptMessage,
    ProviderError,
    ProviderSession,
    ToolSpec,
)
from services.agent.providers.factory import ProviderSessions, SessionRequest
from services.agent.settings import AgentSettings
from services.common.credentials import Credentials, Endpoint
from tests.fakes.openai_server import FakeOpenAI, Reasoning, Text, chat_turn, responses_turn
from tests.providers.sessions import Recorder

OR_KEY = "sk-or-v1-FAKE-do-not-leak-0123"
BROWSER_KEY = "sk-or-v1-BROWSER-do-not-leak-4567"
AZURE_KEY = "azure-FAKE-do-not-leak-89ab"
OLLAMA_KEY = "ollama-FAKE-do-not-leak-cdef"
KIMI = "kimi-k3 (low thinking)"
MESSAGES = (PromptMessage("system", "You build pages."), PromptMessage("user", "A page"))
CREATE_FILE = ToolSpec("create_file", "Create a file", {"type": "object"})


# Every factory a test built, its SDK clients closed after the test.
_FACTORIES: list[ProviderSessions] = []


@pytest.fixture(autouse=True)
async def _close_factories() -> AsyncIterator[None]:
    yield
    while _FACTORIES:
        await _FACTORIES.pop().aclose()


def build(
    settings: AgentSettings, model: str, request_credentials: Credentials | None = None
) -> ProviderSession:
    """The session the agent would run for `model`, the request carrying these keys."""
    request = GenerationRequest(
        generation_id="g-any", credentials=request_credentials or Credentials()
    )
    plan = Planner(settings).plan(request)
    factory = ProviderSessions(settings)
    _FACTORIES.append(factory)
    return factory(
        SessionRequest(
            resolve(model, settings.endpoints),
            variant_index=0,
            messages=MESSAGES,
            tools=(CREATE_FILE,),
            request=request,
            credentials=plan.credentials,
        )
    )


async def one_turn(session: ProviderSession) -> Recorder:
    seen = Recorder()
    try:
        await session.stream_turn(seen)
    finally:
        await session.close()
    return seen


def openrouter_env(base_url: str, key: str = OR_KEY) -> AgentSettings:
    env = {"OPENROUTER_API_KEY": key, "OPENROUTER_BASE_URL": base_url}
    return AgentSettings(credentials=Credentials.from_env(env), provider_max_retries=0)


async def test_kimi_runs_on_openrouters_responses_api_with_low_effort_and_its_cap() -> None:
    async with FakeOpenAI(root="/api/v1", bearer=OR_KEY) as fake:
        fake.add_response(responses_turn([Reasoning([["Plan"]]), Text(["Hi from Kimi"])]))
        seen = await one_turn(build(openrouter_env(fake.base_url), KIMI))
    assert AssistantDelta("Hi from Kimi") in seen.events
    [sent] = fake.requests
    assert sent.path == "/api/v1/responses"
    assert sent.headers["Authorization"] == f"Bearer {OR_KEY}"
    assert sent.json["model"] == "moonshotai/kimi-k3"
    assert sent.json["reasoning"]["effort"] == "low"
    assert sent.json["max_output_tokens"] == 20_000
    assert sent.json["stream"] is True


async def test_a_browser_key_goes_to_the_operators_openrouter_base_url() -> None:
    async with FakeOpenAI(root="/api/v1", bearer=BROWSER_KEY) as fake:
        fake.add_response(responses_turn([Text(["ok"])]))
        # The operator names the base URL but no key; the browser brings the key.
        env = {"OPENROUTER_BASE_URL": fake.base_url, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
        settings = AgentSettings(credentials=Credentials.from_env(env), provider_max_retries=0)
        browser = Credentials.of(openrouter=Endpoint(BROWSER_KEY))
        await one_turn(build(settings, KIMI, browser))
    [sent] = fake.requests
    assert sent.headers["Authorization"] == f"Bearer {BROWSER_KEY}"
    assert sent.json["model"] == "moonshotai/kimi-k3"


async def test_without_a_base_url_the_key_goes_to_openrouter_itself() -> None:
    settings = AgentSettings(credentials=Credentials.from_env({"OPENROUTER_API_KEY": OR_KEY}))
    session = build(settings, KIMI)
    client = session.inner._client  # type: ignore[attr-defined]
    await session.close()
    assert str(client.base_url) == "https://openrouter.ai/api/v1/"


async def test_any_openrouter_model_by_id_runs_on_chat_completions() -> None:
    async with FakeOpenAI(root="/api/v1", bearer=OR_KEY) as fake:
        fake.add_chat(chat_turn([Text(["hello"])]))
        await one_turn(build(openrouter_env(fake.base_url), "openrouter:qwen/qwen3-coder"))
    [sent] = fake.requests
    assert sent.path == "/api/v1/chat/completions"
    assert sent.json["model"] == "qwen/qwen3-coder"


async def test_a_wrong_openrouter_key_names_openrouter_and_never_the_key() -> None:
    async with FakeOpenAI(root="/api/v1", bearer=OR_KEY) as fake:
        with pytest.raises(ProviderError) as failed:
            await one_turn(build(openrouter_env(fake.base_url, key="sk-or-v1-wrong-0000"), KIMI))
    assert "Incorrect OpenRouter API key" in failed.value.message
    assert "OPENROUTER_API_KEY" in failed.value.message
    assert "sk-or-v1-wrong" not in failed.value.message


def test_no_openrouter_key_is_a_missing_key_error() -> None:
    with pytest.raises(ProviderError, match=r"OpenRouter API key is missing.*OPENROUTER_API_KEY"):
        build(AgentSettings(), "openrouter:qwen/qwen3-coder")


def models_file(tmp_path: Path, text: str, **env: str) -> AgentSettings:
    path = tmp_path / "models.toml"
    path.write_text(text)
    settings = AgentSettings.from_env({"S2C_MODELS_FILE": str(path), **env})
    return replace(settings, provider_max_retries=0)


async def test_azure_sends_its_key_header_version_and_deployment(tmp_path: Path) -> None:
    async with FakeOpenAI(azure_key=AZURE_KEY, deployments=frozenset({"my-gpt55"})) as fake:
        fake.add_chat(chat_turn([Text(["from Azure"])]))
        settings = models_file(
            tmp_path,
            '[[endpoint]]\nname = "azure"\napi = "azure"\n'
            f'base_url = "{fake.base_url}"\napi_version = "2025-04-01-preview"\n'
            '[[endpoint.model]]\nid = "gpt-5.5"\ndeployment = "my-gpt55"\n',
            AZURE_OPENAI_API_KEY=AZURE_KEY,
        )
        seen = await one_turn(build(settings, "azure:gpt-5.5"))
    assert AssistantDelta("from Azure") in seen.events
    [sent] = fake.requests
    assert sent.path == "/openai/deployments/my-gpt55/chat/completions"
    assert sent.query == {"api-version": "2025-04-01-preview"}
    assert sent.headers["api-key"] == AZURE_KEY
    assert "Authorization" not in sent.headers


async def test_azure_reads_the_sdks_standard_variables(tmp_path: Path) -> None:
    async with FakeOpenAI(azure_key=AZURE_KEY, deployments=frozenset({"gpt-5.5"})) as fake:
        fake.add_chat(chat_turn([Text(["ok"])]))
        settings = models_file(
            tmp_path,
            '[[endpoint]]\nname = "corp"\napi = "azure"\n[[endpoint.model]]\nid = "gpt-5.5"\n',
            AZURE_OPENAI_API_KEY=AZURE_KEY,
            AZURE_OPENAI_ENDPOINT=fake.base_url,
            OPENAI_API_VERSION="2024-10-21",
        )
        await one_turn(build(settings, "corp:gpt-5.5"))
    [sent] = fake.requests
    assert (sent.path, sent.query) == (
        "/openai/deployments/gpt-5.5/chat/completions",
        {"api-version": "2024-10-21"},
    )


async def test_an_unknown_azure_deployment_is_reported_as_azure_says(tmp_path: Path) -> None:
    async with FakeOpenAI(azure_key=AZURE_KEY, deployments=frozenset({"other"})) as fake:
        settings = models_file(
            tmp_path,
            f'[[endpoint]]\nname = "az"\napi = "azure"\nbase_url = "{fake.base_url}"\n'
            'api_version = "2024-10-21"\n[[endpoint.model]]\nid = "gpt-5.5"\n',
            AZURE_OPENAI_API_KEY=AZURE_KEY,
        )
        with pytest.raises(ProviderError) as failed:
            await one_turn(build(settings, "az:gpt-5.5"))
    assert "Azure OpenAI 'az'" in failed.value.message
    assert AZURE_KEY not in failed.value.message


async def test_an_endpoints_key_goes_only_to_that_endpoint(tmp_path: Path) -> None:
    async with FakeOpenAI(bearer=OLLAMA_KEY) as ollama, FakeOpenAI() as other:
        ollama.add_chat(chat_turn([Text(["a"])]))
        other.add_response(responses_turn([Text(["b"])]))
        settings = models_file(
            tmp_path,
            f'[[endpoint]]\nname = "ollama"\nbase_url = "{ollama.base_url}"\n'
            'api_key_env = "OLLAMA_API_KEY"\n'
            '[[endpoint.model]]\nid = "qwen3-vl:8b"\nprice_in = 0.5\nprice_out = 1.0\n'
            f'[[endpoint]]\nname = "vllm"\napi = "responses"\nbase_url = "{other.base_url}"\n'
            '[[endpoint.model]]\nid = "gpt-oss-20b"\ntools = false\nvision = false\n',
            OLLAMA_API_KEY=OLLAMA_KEY,
            OPENAI_API_KEY="sk-openai-never-sent-to-endpoints",
        )
        await one_turn(build(settings, "ollama:qwen3-vl:8b"))
        await one_turn(build(settings, "vllm:gpt-oss-20b"))
    assert ollama.requests[0].json["model"] == "qwen3-vl:8b"
    assert ollama.requests[0].headers["Authorization"] == f"Bearer {OLLAMA_KEY}"
    [sent] = other.requests
    assert (sent.path, sent.json["model"]) == ("/v1/responses", "gpt-oss-20b")
    assert OLLAMA_KEY not in sent.headers["Authorization"]
    assert "sk-openai" not in sent.headers["Authorization"]
    spec = resolve("vllm:gpt-oss-20b", settings.endpoints)
    assert (spec.vision, spec.tools, spec.price) == (False, False, None)
    priced = resolve("ollama:qwen3-vl:8b", settings.endpoints)
    assert priced.price is not None
    assert (priced.price.input, priced.price.output) == (0.5, 1.0)
