"""Gemini and an OpenAI-compatible local server behind the agent, over gRPC."""

from __future__ import annotations

import json
from pathlib import Path

from s2c.agent.v1 import agent_service_pb2 as pb

from services.agent.settings import AgentSettings
from services.common.credentials import Credentials, Endpoint
from tests.fakes.gemini_server import Call, FakeGemini, Say, Thought
from tests.fakes.openai_server import FakeOpenAI, FunctionCall, Reasoning, Text, chat_turn
from tests.suite import generation_events, running_suite

PAGE = "<!DOCTYPE html><html><body><h1>Hello from a model</h1></body></html>"


def greeting(**fields: object) -> pb.GenerateCodeRequest:
    return pb.GenerateCodeRequest(
        input_mode=pb.INPUT_MODE_TEXT,
        prompt=pb.Prompt(text="A greeting page"),
        variant_count=1,
        **fields,  # type: ignore[arg-type]
    )


def final_code(events: list[pb.GenerationEvent]) -> str:
    snapshots = [e.code_snapshot.content for e in events if e.HasField("code_snapshot")]
    return snapshots[-1]


async def test_gemini_tool_loop(tmp_path: Path, fake_gemini: FakeGemini) -> None:
    fake = fake_gemini
    fake.add_turn(
        Thought("Planning a greeting."),
        Call("create_file", {"path": "index.html", "content": PAGE}, id="g1", signature=b"sig1"),
    )
    fake.add_turn(Call("edit_file", {"old_text": "Hello", "new_text": "Hi"}, id="g2"))
    fake.add_turn(Say("Done."))
    settings = AgentSettings(
        provider_max_retries=0,
        credentials=Credentials.of(gemini=Endpoint("g-key", fake.base_url)),
    )
    async with running_suite(tmp_path, agent=settings) as suite:
        events = await generation_events(
            suite.agent.port, greeting(models=["gemini-3-flash-preview (minimal thinking)"])
        )
    assert events[-1].generation_complete.status == pb.RUN_STATUS_COMPLETED
    assert final_code(events) == PAGE.replace("Hello", "Hi")
    assert any(e.HasField("thinking_delta") for e in events)
    second = fake.requests[1].body["contents"]
    assert second[-2]["role"] == "model"
    assert second[-1]["parts"][0]["functionResponse"]["id"] == "g1"


async def test_openai_compatible_local_server(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake = fake_openai
    args = json.dumps({"path": "index.html", "content": PAGE})
    fake.add_chat(
        chat_turn(
            [Reasoning([["thinking..."]]), FunctionCall("c1", "create_file", args, pieces=5)]
        ),
        chat_turn([Text(["All done."])]),
    )
    settings = AgentSettings(local_models=("llama3.2",), local_base_url=fake.base_url)
    async with running_suite(tmp_path, agent=settings) as suite:
        events = await generation_events(suite.agent.port, greeting())
    counts = [e.variant_count for e in events if e.HasField("variant_count")]
    assert list(counts[0].models) == ["local:llama3.2"]
    assert events[-1].generation_complete.status == pb.RUN_STATUS_COMPLETED
    assert final_code(events) == PAGE
    second = fake.requests[1].json["messages"]
    assert second[-1]["role"] == "tool"
    assert second[-1]["tool_call_id"] == "c1"
    assert fake.requests[0].json["model"] == "llama3.2"
