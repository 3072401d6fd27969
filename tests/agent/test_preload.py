"""The agent imports the sessions of the providers it has keys for before it serves."""

from __future__ import annotations

import importlib
import inspect

from services.agent.providers import registry
from services.agent.settings import AgentSettings
from services.common.credentials import Credentials, Endpoint


def test_only_the_keyed_providers_are_preloaded() -> None:
    settings = AgentSettings(credentials=Credentials.of(anthropic=Endpoint("sk-ant-test")))
    assert registry.preload(settings) == ["services.agent.providers.anthropic"]
    assert registry.preload(AgentSettings()) == []


def test_a_local_server_preloads_the_chat_session() -> None:
    settings = AgentSettings(local_base_url="http://127.0.0.1:11434/v1")
    assert registry.preload(settings) == ["services.agent.providers.openai_chat"]


def test_every_spec_names_the_module_of_its_session() -> None:
    for spec in registry.PROVIDERS:
        module = importlib.import_module(spec.module)
        assert any(
            inspect.isclass(c)
            and c.__module__ == module.__name__
            and c.__name__.endswith("Session")
            for c in vars(module).values()
        ), spec.id
        # The builder's own lazy import names the same module.
        assert spec.module in inspect.getsource(spec.session), spec.id
