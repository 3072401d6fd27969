"""Losing a process or a socket: records close, browsers hear about it, nothing is lost."""

from __future__ import annotations

import asyncio
import json
from itertools import takewhile
from pathlib import Path
from typing import Any

import aiohttp
import grpc
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.agent.settings import AgentSettings
from services.gateway.relay import TRY_AGAIN_LATER
from tests.processes import Processes, base_env, running_processes, start_service
from tests.suite import Suite, close_once_coding, create_params, run_ws, running_suite


async def test_agent_killed_mid_generation_closes_the_record_as_interrupted(
    tmp_path: Path,
) -> None:
    async with running_processes(tmp_path, {"S2C_DEMO_PACE_MS": "30"}) as suite:
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(suite.ws_url) as ws:
                # `resumable` only so the browser learns the generation id.
                await ws.send_str(json.dumps(create_params(resumable=True)))
                frames: list[dict[str, Any]] = []
                async for message in ws:
                    frames.append(json.loads(message.data))
                    if frames[-1]["type"] == "setCode":
                        suite.agent.process.kill()  # SIGKILL: no chance to clean up
                        break
                async for message in ws:
                    frames.append(json.loads(message.data))
                close_code = ws.close_code
        # Resumable: told to re-attach later (its agent may be restarting under the same
        # name, test_rolling.py), not given a final error.
        assert close_code == TRY_AGAIN_LATER
        assert not [f for f in frames if f["type"] == "error"]
        generation_id = frames[0]["value"]
        await suite.agent.process.wait()

        # The agent restarts on the same data dir and closes what the crash left open.
        env = base_env(tmp_path, {"S2C_TOOLS_ADDR": f"127.0.0.1:{suite.tools.port}"})
        agent = await start_service(
            "agent", ["--listen", "127.0.0.1:0", "--metrics-listen", ""], env
        )
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{agent.port}") as channel:
                stub = pb_grpc.AgentServiceStub(channel)
                record = await stub.GetGeneration(
                    pb.GetGenerationRequest(generation_id=generation_id)
                )
        finally:
            await agent.stop()
        assert record.generation.status == pb.RUN_STATUS_INTERRUPTED
        assert record.generation.HasField("finished_at")
        assert {v.status for v in record.generation.variants} == {pb.RUN_STATUS_INTERRUPTED}
        assert [v.model for v in record.generation.variants] == ["demo", "demo"]


async def test_a_dropped_resumable_browser_reattaches_without_loss(tmp_path: Path) -> None:
    async with running_suite(tmp_path, agent=AgentSettings(demo_pace_s=0.01)) as suite:
        params = create_params(resumable=True)
        first: list[dict[str, Any]] = []
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(suite.ws_url) as ws:
                await ws.send_str(json.dumps(params))
                async for message in ws:
                    first.append(json.loads(message.data))
                    if first[-1]["type"] == "toolResult":
                        break
                # A network drop, not a cancel: close with a generic code.
                await ws.close(code=1001)
        generation_id = first[0]["value"]
        assert first[0]["type"] == "generation"
        last_seq = max(f["seq"] for f in first if "seq" in f)
        resumed = await run_ws(
            suite.ws_url, {"resumeGenerationId": generation_id, "afterSequence": last_seq}
        )
        assert resumed.close_code == 1000
        # The whole generation replayed from the start, for comparison.
        whole = await run_ws(suite.ws_url, {"resumeGenerationId": generation_id})

    def semantic(frames: list[dict[str, Any]]) -> tuple[list[Any], dict[str, str], dict[int, str]]:
        tools = [
            (f["type"], f["variantIndex"], f["eventId"], f["data"]["name"])
            for f in frames
            if f["type"] in ("toolStart", "toolResult")
        ]
        text: dict[str, str] = {}
        for f in frames:
            if f["type"] in ("thinking", "assistant"):
                text[f["eventId"]] = text.get(f["eventId"], "") + f["value"]
        code = {f["variantIndex"]: f["value"] for f in frames if f["type"] == "setCode"}
        ends = [(f["type"], f.get("variantIndex")) for f in frames if "variant" in f["type"]]
        return tools + ends, text, code

    dropped_then_resumed = semantic(first[1:] + resumed.frames)
    uninterrupted = semantic(whole.frames)
    assert dropped_then_resumed == uninterrupted
    # First the variants' code as of `last_seq` (whole, each with its code's seq), then
    # only frames of later events.
    code = list(
        takewhile(lambda f: f["type"] == "setCode" and f["seq"] <= last_seq, resumed.frames)
    )
    assert code
    assert all(f["seq"] > last_seq for f in resumed.frames[len(code) :] if "seq" in f)


async def test_a_non_resumable_drop_cancels_at_once(tmp_path: Path) -> None:
    async with running_suite(tmp_path, agent=AgentSettings(demo_pace_s=0.05)) as suite:
        await close_once_coding(suite.ws_url, 1001)
        generation = suite.agent.manager.generations()[0]
        assert generation.task is not None
        await asyncio.wait({generation.task}, timeout=10)
        assert generation.status == "cancelled"


async def test_watch_of_an_unknown_generation_is_an_error_frame(suite: Suite) -> None:
    result = await run_ws(suite.ws_url, {"resumeGenerationId": "nope", "afterSequence": 3})
    bad = await run_ws(suite.ws_url, {"resumeGenerationId": "", "afterSequence": -1})
    assert result.close_code == 4332
    assert "no generation 'nope'" in result.frames[-1]["value"]
    assert bad.frames == [
        {
            "type": "error",
            "value": "Invalid resume: resumeGenerationId must be a non-empty string",
        }
    ]


async def _generate_until_first_code(ws: aiohttp.ClientWebSocketResponse) -> list[dict[str, Any]]:
    await ws.send_str(json.dumps(create_params(resumable=True)))
    frames: list[dict[str, Any]] = []
    async for message in ws:
        frames.append(json.loads(message.data))
        if frames[-1]["type"] == "setCode":
            break
    return frames


async def _record_after_restart(
    tmp_path: Path, suite: Processes, generation_id: str
) -> tuple[pb.GetGenerationResponse, list[str]]:
    """The run record a fresh agent on the same data dir reads, and that agent's log."""
    restarted = await start_service(
        "agent",
        ["--listen", "127.0.0.1:0", "--metrics-listen", ""],
        base_env(tmp_path, {"S2C_TOOLS_ADDR": f"127.0.0.1:{suite.tools.port}"}),
    )
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{restarted.port}") as channel:
            record = await pb_grpc.AgentServiceStub(channel).GetGeneration(
                pb.GetGenerationRequest(generation_id=generation_id)
            )
    finally:
        await restarted.stop()
    return record, restarted.log


async def test_sigterm_lets_running_generations_finish(tmp_path: Path) -> None:
    async with running_processes(tmp_path, {"S2C_DEMO_PACE_MS": "5"}) as suite:
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(suite.ws_url) as ws:
                frames = await _generate_until_first_code(ws)
                suite.agent.process.terminate()
                async for message in ws:
                    frames.append(json.loads(message.data))
                close_code = ws.close_code
        assert close_code == 1000
        assert [f["type"] for f in frames].count("variantComplete") == 2
        assert await suite.agent.process.wait() == 0
        assert suite.agent.drain is not None
        await suite.agent.drain  # its whole log, read to the end
        # The store closed only after the generation had ended: its final record landed,
        # and nothing failed on the way down.
        levels = [json.loads(line)["level"] for line in suite.agent.log if line.startswith("{")]
        assert not {"error", "critical"} & set(levels), "".join(suite.agent.log[-20:])
        record, _ = await _record_after_restart(tmp_path, suite, frames[0]["value"])
        assert record.generation.status == pb.RUN_STATUS_COMPLETED
        assert {v.status for v in record.generation.variants} == {pb.RUN_STATUS_COMPLETED}


async def test_sigterm_after_the_grace_period_cancels_and_closes_the_record(
    tmp_path: Path,
) -> None:
    env = {"S2C_DEMO_PACE_MS": "50", "S2C_SHUTDOWN_GRACE_S": "0.2"}
    async with running_processes(tmp_path, env) as suite:
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(suite.ws_url) as ws:
                frames = await _generate_until_first_code(ws)
                suite.agent.process.terminate()
                async for message in ws:
                    frames.append(json.loads(message.data))
        assert await suite.agent.process.wait() == 0
        record, log = await _record_after_restart(tmp_path, suite, frames[0]["value"])
        assert record.generation.status == pb.RUN_STATUS_CANCELLED
        assert not any("runs interrupted" in line for line in log)
