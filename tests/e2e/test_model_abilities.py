"""Models that cannot read images or call tools (issue #27, items 4 and 5), over gRPC.

Each model here is a model of an `ollama` endpoint of the models file (S2C_MODELS_FILE),
with `vision`/`tools` as the file says; the server behind it is the fake Chat Completions
server.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from s2c.agent.v1 import agent_service_pb2 as pb

from services.agent.settings import AgentSettings
from services.common.errors import bad_request_violations
from tests.fakes.openai_server import (
    ErrorReply,
    FakeOpenAI,
    Text,
    chat_turn,
    http_error,
    split,
)
from tests.providers.test_openai_chat import TOOL_REFUSALS
from tests.suite import generation_events, generation_refusal, png_data_url, running_suite


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
        refused = await generation_refusal(suite.agent.port, request)
        assert suite.agent.manager.generations() == []
    assert refused.code() == grpc.StatusCode.INVALID_ARGUMENT
    violations = [(v.field, v.description) for v in bad_request_violations(refused)]
    assert violations == [
        (
            "models[1]",
            "Model ollama:text-only-coder reads no images (vision = false); models "
            "configured here that read images: ollama:qwen3-vl",
        )
    ]
    assert fake_openai.requests == []


TEXT_ONLY = '[[endpoint.model]]\nid = "old-coder"\ntools = false\n'
# A page long enough to stream in several previews (more than three replay steps).
PAGE = (
    "<!DOCTYPE html>\n<html><head><title>Shop</title></head><body>\n"
    + "".join(
        f'<section id="s{i}"><h2>Part {i}</h2><p>Text of part {i}.</p></section>\n'
        for i in range(40)
    )
    + "</body></html>"
)
ANSWER = f"Here is your page.\n\n```html\n{PAGE}\n```\n\nIt lists forty parts."


def text_request(model: str) -> pb.GenerateCodeRequest:
    return pb.GenerateCodeRequest(
        input_mode=pb.INPUT_MODE_TEXT,
        prompt=pb.Prompt(text="A shop page"),
        models=[model],
        variant_count=1,
    )


def assert_page_streamed_from_text(events: list[pb.GenerationEvent]) -> None:
    """The page previewed as create_file content is (at least three code deltas, then
    the snapshot), the prose around it as chat text, and the run completed with it."""
    kinds = [e.WhichOneof("payload") for e in events]
    snapshot = kinds.index("code_snapshot")
    deltas = [e.code_delta for e in events[:snapshot] if e.HasField("code_delta")]
    assert len(deltas) >= 3
    code = ""
    for delta in deltas:
        assert delta.offset == len(code)  # append-only
        code += delta.text
    assert code == PAGE
    assert events[snapshot].code_snapshot.content == PAGE
    prose = "".join(e.assistant_delta.text for e in events if e.HasField("assistant_delta"))
    assert prose == "Here is your page.\n\n\n\nIt lists forty parts."
    starts = [e.tool_start for e in events if e.HasField("tool_start")]
    assert [s.name for s in starts] == ["create_file"]
    assert "variant_complete" in kinds
    assert events[-1].generation_complete.status == pb.RUN_STATUS_COMPLETED


async def test_a_model_without_tools_streams_the_page_from_its_fenced_answer(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.add_chat(chat_turn([Text(split(ANSWER, 40))]))
    settings = endpoint_settings(tmp_path, fake_openai.base_url, TEXT_ONLY)
    async with running_suite(tmp_path, agent=settings) as suite:
        events = await generation_events(suite.agent.port, text_request("ollama:old-coder"))
        record = suite.agent.manager.get(events[0].generation_id)
    assert_page_streamed_from_text(events)
    [sent] = fake_openai.requests
    assert "tools" not in sent.json
    assert "```html" in sent.json["messages"][0]["content"]
    assert record is not None
    assert record.variants[0].code == PAGE


OLLAMA_REFUSAL = http_error(
    400, "registry.ollama.ai/library/old-coder:latest does not support tools", type="api_error"
)
# vLLM without tool parsing (400), llama.cpp without --jinja (500): their own bodies.
VLLM_REFUSAL, LLAMA_CPP_REFUSAL = TOOL_REFUSALS[1], TOOL_REFUSALS[3]


@pytest.mark.parametrize(
    "refusal",
    [OLLAMA_REFUSAL, VLLM_REFUSAL, LLAMA_CPP_REFUSAL],
    ids=["ollama", "vllm", "llama.cpp"],
)
async def test_a_server_refusing_tools_is_asked_again_without_and_remembered(
    tmp_path: Path, fake_openai: FakeOpenAI, refusal: ErrorReply
) -> None:
    fake_openai.add_chat(refusal, chat_turn([Text(split(ANSWER, 40))]))
    fake_openai.add_chat(chat_turn([Text(split(ANSWER, 40))]))
    settings = AgentSettings(provider_max_retries=0, local_base_url=fake_openai.base_url)
    async with running_suite(tmp_path, agent=settings) as suite:
        first = await generation_events(suite.agent.port, text_request("local:old-coder"))
        second = await generation_events(suite.agent.port, text_request("local:old-coder"))
    for events in (first, second):
        assert_page_streamed_from_text(events)
    statuses = [e.status.text for e in first if e.HasField("status")]
    assert statuses[-1] == "local:old-coder takes no tools here: the page comes as text."
    refused, retried, remembered = (r.json for r in fake_openai.requests)
    assert "tools" in refused
    assert "create_file" in json.dumps(refused["tools"])
    assert "tools" not in retried
    assert "tools" not in remembered
    assert "```html" in retried["messages"][0]["content"]
    assert remembered["messages"] == retried["messages"]


async def test_tool_calls_written_as_text_run_as_tool_calls(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    call = {"name": "create_file", "arguments": {"path": "index.html", "content": PAGE}}
    written = f"I will write the page.\n<tool_call>\n{json.dumps(call)}\n</tool_call>"
    fake_openai.add_chat(
        chat_turn([Text(split(written, 30))]), chat_turn([Text(["The page is ready."])])
    )
    settings = AgentSettings(provider_max_retries=0, local_base_url=fake_openai.base_url)
    async with running_suite(tmp_path, agent=settings) as suite:
        events = await generation_events(suite.agent.port, text_request("local:hermes-style"))
        record = suite.agent.manager.get(events[0].generation_id)
    assert events[-1].generation_complete.status == pb.RUN_STATUS_COMPLETED
    prose = "".join(e.assistant_delta.text for e in events if e.HasField("assistant_delta"))
    assert prose == "I will write the page.\nThe page is ready."
    results = [e.tool_result for e in events if e.HasField("tool_result")]
    assert [(r.name, r.ok) for r in results] == [("create_file", True)]
    snapshots = [e.code_snapshot.content for e in events if e.HasField("code_snapshot")]
    assert snapshots[-1] == PAGE
    assert record is not None
    assert record.variants[0].code == PAGE
    assert [t.name for t in record.variants[0].tool_calls] == ["create_file"]
    # The next request carries the call as the API's own, and its result.
    messages = fake_openai.requests[1].json["messages"]
    assistant, result = messages[-2], messages[-1]
    assert assistant["content"] == "I will write the page.\n"
    [sent] = assistant["tool_calls"]
    assert sent["function"]["name"] == "create_file"
    # The history elides a written file's content, as it does for the API's own calls.
    assert json.loads(sent["function"]["arguments"])["path"] == "index.html"
    assert result["role"] == "tool"
    assert result["tool_call_id"] == sent["id"]
