"""Models that cannot read images or call tools (issue #27, items 4 and 5), over gRPC.

Each model here is a model of an `ollama` endpoint of the models file (S2C_MODELS_FILE),
with `vision`/`tools` as the file says; the server behind it is the fake Chat Completions
server.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.agent.settings import AgentSettings
from services.common.errors import bad_request_violations
from tests.fakes.openai_server import FakeOpenAI
from tests.suite import png_data_url, running_suite


def endpoint_settings(tmp_path: Path, base_url: str, models: str) -> AgentSettings:
    """The agent's settings with a models file of one Chat Completions endpoint, `ollama`,
    serving `models` (TOML `[[endpoint.model]]` tables)."""
    path = tmp_path / "models.toml"
    path.write_text(
        f'[[endpoint]]\nname = "ollama"\napi = "chat"\nbase_url = "{base_url}"\n{models}',
        encoding="utf-8",
    )
    settings = AgentSettings.from_env({"S2C_MODELS_FILE": str(path)})
    return replace(settings, provider_max_retries=0)


VISION = '[[endpoint.model]]\nid = "qwen3-vl"\n'
BLIND = '[[endpoint.model]]\nid = "text-only-coder"\nvision = false\n'


async def test_an_image_for_a_model_that_reads_none_is_refused_before_any_request(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    settings = endpoint_settings(tmp_path, fake_openai.base_url, VISION + BLIND)
    request = pb.GenerateCodeRequest(
        input_mode=pb.INPUT_MODE_IMAGE,
        prompt=pb.Prompt(images=[png_data_url()]),
        models=["ollama:qwen3-vl", "ollama:text-only-coder"],
        variant_count=2,
    )
    async with running_suite(tmp_path, agent=settings) as suite:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{suite.agent.port}") as channel:
            stub = pb_grpc.AgentServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                async for _ in stub.GenerateCode(request):
                    pass
        assert suite.agent.manager.generations() == []
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    violations = [(v.field, v.description) for v in bad_request_violations(caught.value)]
    assert violations == [
        (
            "models[1]",
            "Model ollama:text-only-coder reads no images (vision = false); models "
            "configured here that read images: ollama:qwen3-vl",
        )
    ]
    assert fake_openai.requests == []
