"""AgentService over a real channel: validation, lookups, resume and the model list."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.common.errors import bad_request_violations
from tests.suite import png_data_url, running_suite


async def test_invalid_request_lists_every_field_violation(tmp_path: Path) -> None:
    async with running_suite(tmp_path) as suite:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{suite.agent.port}") as channel:
            stub = pb_grpc.AgentServiceStub(channel)
            request = pb.GenerateCodeRequest(
                generation_id="bad id!",
                stack=99,  # type: ignore[arg-type]
                variant_count=50,
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
        "models[0]",
        "prompt.images[0]",
        "history[0].role",
    }
    assert "Unknown model: gpt-0" in fields["models[0]"]


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
            live = [event async for event in stub.GenerateCode(request)]
            assert [e.sequence for e in live] == list(range(1, len(live) + 1))
            assert live[-1].generation_complete.status == pb.RUN_STATUS_COMPLETED
            resumed = [
                event
                async for event in stub.WatchGeneration(
                    pb.WatchGenerationRequest(generation_id="gen-1", after_sequence=5)
                )
            ]
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


async def test_batched_streams_carry_the_same_events_in_fewer_messages(tmp_path: Path) -> None:
    async with running_suite(tmp_path) as suite:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{suite.agent.port}") as channel:
            stub = pb_grpc.AgentServiceStub(channel)
            request = pb.GenerateCodeRequest(
                generation_id="gen-b",
                input_mode=pb.INPUT_MODE_TEXT,
                prompt=pb.Prompt(text="A bakery landing page"),
                variant_count=2,
            )
            batches = [batch async for batch in stub.GenerateCodeBatched(request)]
            live = [event for batch in batches for event in batch.events]
            assert all(batch.events for batch in batches)
            assert [e.sequence for e in live] == list(range(1, len(live) + 1))
            assert live[-1].generation_complete.status == pb.RUN_STATUS_COMPLETED
            # The demo streams instantly here: a tick's worth of events shares a message.
            assert len(batches) < len(live)
            one_by_one = [
                event
                async for event in stub.WatchGeneration(
                    pb.WatchGenerationRequest(generation_id="gen-b")
                )
            ]
            assert one_by_one == live
            for after in (0, 7, len(live) - 1, len(live)):
                resumed = [
                    event
                    async for batch in stub.WatchGenerationBatched(
                        pb.WatchGenerationRequest(generation_id="gen-b", after_sequence=after)
                    )
                    for event in batch.events
                ]
                assert resumed == live[after:]
            with pytest.raises(grpc.aio.AioRpcError) as missing:
                async for _ in stub.WatchGenerationBatched(
                    pb.WatchGenerationRequest(generation_id="nope")
                ):
                    pass
            assert missing.value.code() == grpc.StatusCode.NOT_FOUND
        # Every event each stream carried is counted once (the load bench reads this).
        sent = suite.agent.metrics.registry.get_sample_value("s2c_agent_events_sent_total")
        n = len(live)
        assert sent == n + n + n + (n - 7) + 1 + 0
