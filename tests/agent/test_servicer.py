"""AgentService over a real channel: validation, lookups, resume and the model list."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterable, AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.agent import servicer
from services.agent.providers.base import ProviderSession
from services.agent.providers.factory import SessionFactory, SessionRequest
from services.agent.providers.scripted import Say, ScriptedSession, ScriptedTurn, call_tool
from services.agent.server import AgentServer
from services.agent.settings import AgentSettings
from services.common.errors import bad_request_violations
from services.tools.server import ToolsServer
from services.tools.settings import ToolsSettings
from tests.suite import png_data_url, running_suite

# The big-file test reads messages near 1 MiB; the client's default limit is 4 MiB.
UNLIMITED = [("grpc.max_receive_message_length", -1)]


async def test_invalid_request_lists_every_field_violation(tmp_path: Path) -> None:
    async with running_suite(tmp_path) as suite:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{suite.agent.port}") as channel:
            stub = pb_grpc.AgentServiceStub(channel)
            request = pb.GenerateCodeRequest(
                generation_id="bad id!",
                stack=99,  # type: ignore[arg-type]
                variant_count=50,
                code_batch_chars=-1,
                models=["gpt-0"],
                prompt=pb.Prompt(images=["http://127.0.0.1/x.png", png_data_url()]),
                history=[pb.HistoryMessage(role=pb.ROLE_UNSPECIFIED, text="x")],
            )
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                async for _ in stub.GenerateCode(request):
                    pass
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    fields = {v.field: v.description for v in bad_request_violations(caught.value)}
    assert set(fields) == {
        "generation_id",
        "stack",
        "variant_count",
        "code_batch_chars",
        "models[0]",
        "prompt.images[0]",
        "history[0].role",
    }
    assert "Unknown model: gpt-0" in fields["models[0]"]
    assert fields["code_batch_chars"] == "must be 0..65536"


async def test_generate_watch_get_and_list(tmp_path: Path) -> None:
    async with running_suite(tmp_path) as suite:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{suite.agent.port}") as channel:
            stub = pb_grpc.AgentServiceStub(channel)
            request = pb.GenerateCodeRequest(
                generation_id="gen-1",
                input_mode=pb.INPUT_MODE_TEXT,
                prompt=pb.Prompt(text="A bakery landing page"),
                variant_count=1,
            )
            _, live = await drain(stub.GenerateCode(request))
            assert [e.sequence for e in live] == list(range(1, len(live) + 1))
            assert live[-1].generation_complete.status == pb.RUN_STATUS_COMPLETED
            watch = pb.WatchGenerationRequest(generation_id="gen-1", after_sequence=5)
            _, resumed = await drain(stub.WatchGeneration(watch))
            assert resumed == live[5:]
            record = await stub.GetGeneration(pb.GetGenerationRequest(generation_id="gen-1"))
            variant = record.generation.variants[0]
            assert record.generation.status == pb.RUN_STATUS_COMPLETED
            assert variant.model == "demo"
            assert "A bakery landing page" in variant.code
            assert [t.name for t in variant.tool_calls] == ["create_file", "edit_file"]
            cancelled = await stub.CancelGeneration(
                pb.CancelGenerationRequest(generation_id="gen-1")
            )
            assert cancelled.cancelled is False  # already finished
            with pytest.raises(grpc.aio.AioRpcError) as missing:
                await stub.GetGeneration(pb.GetGenerationRequest(generation_id="nope"))
            assert missing.value.code() == grpc.StatusCode.NOT_FOUND
            models = await stub.ListModels(pb.ListModelsRequest())
            by_id = {m.id: m for m in models.models}
            assert by_id["demo"].available
            assert not by_id["claude-opus-4-8 (medium effort)"].available
            keyed = await stub.ListModels(
                pb.ListModelsRequest(credentials={"providers": {"anthropic": {"api_key": "sk-x"}}})
            )
            assert {m.id: m for m in keyed.models}["claude-opus-4-8 (medium effort)"].available
        registry = suite.agent.metrics.registry
        assert registry.get_sample_value("s2c_generations_total", {"outcome": "completed"}) == 1
        assert (
            registry.get_sample_value(
                "s2c_variants_total", {"provider": "demo", "outcome": "completed"}
            )
            == 1
        )
        tool_count = registry.get_sample_value(
            "s2c_agent_tool_call_seconds_count", {"tool": "create_file", "ok": "true"}
        )
        assert tool_count == 1


async def test_streams_carry_every_event_in_order_and_resume_anywhere(tmp_path: Path) -> None:
    async with running_suite(tmp_path) as suite:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{suite.agent.port}") as channel:
            stub = pb_grpc.AgentServiceStub(channel)
            request = pb.GenerateCodeRequest(
                generation_id="gen-b",
                input_mode=pb.INPUT_MODE_TEXT,
                prompt=pb.Prompt(text="A bakery landing page"),
                variant_count=2,
            )
            messages, live = await drain(stub.GenerateCode(request))
            assert all(message.events for message in messages)
            assert [e.sequence for e in live] == list(range(1, len(live) + 1))
            assert live[-1].generation_complete.status == pb.RUN_STATUS_COMPLETED
            # The demo streams instantly here: a tick's worth of events shares a message.
            assert len(messages) < len(live)
            for after in (0, 7, len(live) - 1, len(live)):
                watch = pb.WatchGenerationRequest(generation_id="gen-b", after_sequence=after)
                watched, resumed = await drain(stub.WatchGeneration(watch))
                assert resumed == live[after:]
                assert all(message.events for message in watched)
            with pytest.raises(grpc.aio.AioRpcError) as missing:
                await drain(stub.WatchGeneration(pb.WatchGenerationRequest(generation_id="nope")))
            assert missing.value.code() == grpc.StatusCode.NOT_FOUND
            assert "nope" in (missing.value.details() or "")
        # Every event each stream carried is counted once (the load bench reads this).
        sent = suite.agent.metrics.registry.get_sample_value("s2c_agent_events_sent_total")
        n = len(live)
        assert sent == n + n + (n - 7) + 1 + 0


async def test_generation_wide_events_name_no_variant(tmp_path: Path) -> None:
    async with running_suite(tmp_path) as suite:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{suite.agent.port}") as channel:
            request = pb.GenerateCodeRequest(
                input_mode=pb.INPUT_MODE_TEXT, prompt=pb.Prompt(text="A café"), variant_count=2
            )
            _, events = await drain(pb_grpc.AgentServiceStub(channel).GenerateCode(request))
    wide = {"variant_count", "generation_error", "generation_complete"}
    for event in events:
        assert event.HasField("variant_index") == (event.WhichOneof("payload") not in wide)
    scoped = {e.variant_index for e in events if e.HasField("variant_index")}
    assert scoped == {0, 1}  # variant 0 is named explicitly, not by a default


async def test_code_deltas_leave_the_ids_the_stream_implies_empty(tmp_path: Path) -> None:
    # agent_service.proto: a code_delta belongs to the stream's generation and to the tool
    # call of its variant's latest tool_start; every other event still names both.
    async with running_suite(tmp_path) as suite:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{suite.agent.port}") as channel:
            request = pb.GenerateCodeRequest(
                input_mode=pb.INPUT_MODE_TEXT, prompt=pb.Prompt(text="A café"), variant_count=2
            )
            _, events = await drain(pb_grpc.AgentServiceStub(channel).GenerateCode(request))
    generation_id = events[0].generation_id
    assert events[0].WhichOneof("payload") == "variant_count"
    assert generation_id
    open_call: dict[int, str] = {}
    code_deltas = 0
    for event in events:
        kind = event.WhichOneof("payload")
        if kind == "code_delta":
            code_deltas += 1
            assert (event.generation_id, event.event_id) == ("", "")
            assert open_call[event.variant_index] == "create_file"
            continue
        assert event.generation_id == generation_id, kind
        if kind == "tool_start":
            assert event.event_id
            open_call[event.variant_index] = event.tool_start.name
    assert code_deltas >= 2


BIG = 900 * 1024  # a file near the tool's limit: several such snapshots exceed 1 MiB


def big_file_then_edit(wanted: SessionRequest) -> ProviderSession:
    # Many lines, as pages have: the edit's diff (in its tool_result) stays small.
    lines = "\n".join(f"<p>{i:06} {'x' * 70}</p>" for i in range(BIG // 84))
    content = f"<!DOCTYPE html><html><body>\n{lines}\n<h1>Old</h1></body></html>"
    create = {"path": "index.html", "content": content}
    edit = {"path": "index.html", "old_text": "Old", "new_text": "New", "count": 1}
    return ScriptedSession(
        [
            ScriptedTurn((call_tool("c1", "create_file", create, 1 << 16),)),
            ScriptedTurn((call_tool("e1", "edit_file", edit),)),
            ScriptedTurn((Say(("Done.",)),)),
        ]
    )


async def test_no_message_is_over_1_mib_with_a_big_file(tmp_path: Path) -> None:
    async with scripted_agent(tmp_path, big_file_then_edit) as port:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=UNLIMITED) as channel:
            stub = pb_grpc.AgentServiceStub(channel)
            request = pb.GenerateCodeRequest(
                generation_id="big",
                input_mode=pb.INPUT_MODE_TEXT,
                prompt=pb.Prompt(text="A big page"),
                variant_count=1,
            )
            _, live = await drain(stub.GenerateCode(request))
            # A finished generation's whole log at once: it must be cut into messages.
            watched, replayed = await drain(
                stub.WatchGeneration(pb.WatchGenerationRequest(generation_id="big"))
            )
    assert replayed == live
    snapshots = [e.code_snapshot.content for e in live if e.HasField("code_snapshot")]
    assert len(snapshots) >= 3
    assert len(snapshots[-1]) > BIG
    assert "<h1>New</h1>" in snapshots[-1]
    assert len(watched) >= 3
    sizes = [message.ByteSize() for message in watched]
    assert all(0 < size <= servicer.MAX_BATCH_BYTES for size in sizes), sizes


class PricedSession(ScriptedSession):
    """A session whose every turn costs 0.25 USD (the demo is free)."""

    def total_cost_usd(self) -> float:
        return 0.25 * self._turn


async def test_usage_events_carry_each_turns_own_cost(tmp_path: Path) -> None:
    async with scripted_agent(tmp_path, big_file_then_edit_priced) as port:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=UNLIMITED) as channel:
            request = pb.GenerateCodeRequest(
                input_mode=pb.INPUT_MODE_TEXT, prompt=pb.Prompt(text="A page"), variant_count=1
            )
            _, events = await drain(pb_grpc.AgentServiceStub(channel).GenerateCode(request))
    turns = [e.usage.cost_usd for e in events if e.HasField("usage")]
    (complete,) = [e.variant_complete for e in events if e.HasField("variant_complete")]
    assert turns == [0.25, 0.25, 0.25]  # per turn, not the running total 0.25, 0.5, 0.75
    assert complete.usage.cost_usd == sum(turns)


def big_file_then_edit_priced(wanted: SessionRequest) -> ProviderSession:
    session = big_file_then_edit(wanted)
    assert isinstance(session, ScriptedSession)
    return PricedSession(session.script)


@contextlib.asynccontextmanager
async def scripted_agent(tmp_path: Path, sessions: SessionFactory) -> AsyncIterator[int]:
    """A real agent whose variants run `sessions`, and a real tool worker; the agent's port."""
    tools = ToolsServer(
        ToolsSettings(screenshots_enabled=False, listen="127.0.0.1:0", data_dir=tmp_path)
    )
    await tools.start()
    settings = AgentSettings(
        listen="127.0.0.1:0", tools_addr=f"127.0.0.1:{tools.port}", data_dir=tmp_path
    )
    agent = AgentServer(settings, sessions)
    await agent.start()
    try:
        yield agent.port
    finally:
        await agent.stop(grace_s=0.0)
        await tools.stop()


async def drain(
    call: AsyncIterable[pb.GenerateCodeResponse] | AsyncIterable[pb.WatchGenerationResponse],
) -> tuple[list[Any], list[pb.GenerationEvent]]:
    """(the stream's messages, their events in order)."""
    messages: list[Any] = [message async for message in call]
    return messages, [event for message in messages for event in message.events]
