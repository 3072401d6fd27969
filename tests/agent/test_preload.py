"""The agent imports the sessions of the providers it has keys for before it freezes its
startup heap, and each provider names its session module once."""

from __future__ import annotations

import gc
import importlib
import inspect
import sys

from services.agent.providers import registry
from services.agent.providers.registry import SessionBuilder
from services.agent.server import AgentServer
from services.agent.settings import AgentSettings
from services.common.credentials import Credentials, Endpoint
from services.common.grpc_server import freeze_startup_heap


async def test_only_the_keyed_providers_are_imported_before_the_freeze() -> None:
    settings = AgentSettings(credentials=Credentials.of(anthropic=Endpoint("sk-ant-test")))
    assert registry.configured_modules(settings) == ["services.agent.providers.anthropic"]
    assert registry.configured_modules(AgentSettings()) == []
    # What the server hands the freeze (GrpcService.serve → freeze_startup_heap).
    server = AgentServer(settings)  # (its channels belong to a running loop)
    assert server.startup_modules() == ["services.agent.providers.anthropic"]
    await server.tools.close()


def test_a_local_server_imports_the_chat_session() -> None:
    settings = AgentSettings(local_base_url="http://127.0.0.1:11434/v1")
    assert registry.configured_modules(settings) == ["services.agent.providers.openai_chat"]


def test_the_freeze_imports_what_it_is_given_first() -> None:
    name = "tabnanny"  # a module no test holds anything of
    sys.modules.pop(name, None)
    try:
        freeze_startup_heap([name])
        assert name in sys.modules
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_every_spec_names_the_module_that_builds_its_session() -> None:
    for spec in registry.PROVIDERS:
        module = importlib.import_module(spec.module)
        build: SessionBuilder = module.session
        assert list(inspect.signature(build).parameters) == ["config", "clients"], spec.id
