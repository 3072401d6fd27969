"""A resumed stream ends the way its generation ended, across gateway and agent restarts.

Real processes: the gateway is SIGKILLed mid-stream (the agent keeps the generation for
its resume grace), restarted, and the client resumes through it; the agent is SIGKILLed
and restarted (the run becomes "interrupted"); a retired generation replays its run record.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import grpc
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.gateway.relay import CANCELLED, INTERRUPTED
from tests.processes import Processes, Service, base_env, start_service
from tests.suite import WsResult, create_params


@dataclass
class Suite(Processes):
    """The three processes, with the environment they restart in."""

    env: dict[str, str]

    async def restart_gateway(self) -> None:
        self.gateway.process.kill()
        await self.gateway.process.wait()
        self.gateway = await start_gateway(self.env, self.agent)

    async def restart_agent(self) -> None:
        self.agent.process.kill()
        await self.agent.process.wait()
        self.agent = await start_agent(self.env, self.tools)


# Metrics on free ports too: the default ones may be taken by another suite on the machine.
METRICS = ("--metrics-listen", "127.0.0.1:0")


async def start_agent(env: dict[str, str], tools: Service) -> Service:
    agent_env = {**env, "S2C_TOOLS_ADDR": f"127.0.0.1:{tools.port}"}
    return await start_service("agent", ["--listen", "127.0.0.1:0", *METRICS], agent_env)


async def start_gateway(env: dict[str, str], agent: Service) -> Service:
    gateway_env = {**env, "S2C_AGENT_ADDR": f"127.0.0.1:{agent.port}"}
    return await start_service("gateway", ["--port", "0"], gateway_env)


@asynccontextmanager
async def suite(data_dir: Path, **extra: str) -> AsyncIterator[Suite]:
    # Paced, so a generation is still streaming when a process is killed.
    env = base_env(data_dir, {"S2C_DEMO_PACE_MS": "15", **extra})
    tools = await start_service("tools", ["--listen", "127.0.0.1:0", *METRICS], env)
    agent = await start_agent(env, tools)
    running = Suite(tools, agent, await start_gateway(env, agent), env)
    try:
        yield running
    finally:
        for service in (running.gateway, running.agent, running.tools):
            if service.process.returncode is None:
                service.process.kill()
                await service.process.wait()


async def start_and_drop(url: str, frames_wanted: int) -> tuple[str, int]:
    """Starts a resumable generation, reads `frames_wanted` frames with a `seq`, and
    returns its id and the last seq, leaving the socket open (the caller kills a process)."""
    session = aiohttp.ClientSession()
    ws = await session.ws_connect(url, max_msg_size=0)
    await ws.send_str(json.dumps(create_params(resumable=True)))
    generation_id, seq, seen = "", 0, 0
    async for message in ws:
        data = json.loads(message.data)
        if data["type"] == "generation":
            generation_id = data["value"]
        elif "seq" in data:
            seq, seen = data["seq"], seen + 1
            if seen >= frames_wanted:
                break
    # Not closed: the socket dies with the process, as a browser's would.
    _OPEN.append((session, ws))
    return generation_id, seq


_OPEN: list[tuple[aiohttp.ClientSession, Any]] = []


async def resume(url: str, generation_id: str, after: int) -> WsResult:
    result = WsResult()
    async with aiohttp.ClientSession() as session, session.ws_connect(url, max_msg_size=0) as ws:
        await ws.send_str(json.dumps({"resumeGenerationId": generation_id, "afterSequence": after}))
        async for message in ws:
            if message.type == aiohttp.WSMsgType.TEXT:
                result.frames.append(json.loads(message.data))
        result.close_code = ws.close_code
    return result


async def close_open_sockets() -> None:
    while _OPEN:
        session, ws = _OPEN.pop()
        await ws.close()
        await session.close()


def finished(generation_id: str, status: str) -> Any:
    return lambda r: (
        r.get("msg") == "generation finished"
        and r.get("generation_id") == generation_id
        and r.get("status") == status
    )


async def test_resume_after_the_gateway_was_killed_completes_the_generation(
    tmp_path: Path,
) -> None:
    async with suite(tmp_path) as s:
        generation_id, seq = await start_and_drop(s.ws_url, frames_wanted=5)
        await s.restart_gateway()
        await close_open_sockets()

        result = await resume(s.ws_url, generation_id, seq)
        # A crashed gateway is not a cancel: the generation ran on, for the resume.
        await s.agent.wait_for_log(finished(generation_id, "completed"))

    assert result.close_code == 1000
    assert sorted(f["variantIndex"] for f in result.of("variantComplete")) == [0, 1]
    assert not result.of("variantError")


async def test_a_generation_nobody_resumes_is_cancelled_after_the_grace_saying_so(
    tmp_path: Path,
) -> None:
    async with suite(tmp_path, S2C_RESUME_GRACE_S="0.5", S2C_DEMO_PACE_MS="200") as s:
        generation_id, seq = await start_and_drop(s.ws_url, frames_wanted=2)
        await s.restart_gateway()
        await close_open_sockets()
        finished_log = await s.agent.wait_for_log(finished(generation_id, "cancelled"))

        result = await resume(s.ws_url, generation_id, seq)

    assert finished_log["ended_by"] == (
        "Cancelled: no client was attached for the 0.5 s resume grace."
    )
    assert result.close_code == 4333
    assert {f["value"] for f in result.of("variantError")} == {CANCELLED}
    assert not result.of("variantComplete")


async def test_resume_of_a_completed_generation_after_a_gateway_restart(tmp_path: Path) -> None:
    async with suite(tmp_path) as s:
        generation_id, seq = await start_and_drop(s.ws_url, frames_wanted=3)
        # The socket is still open, so the generation runs on to its end.
        await s.agent.wait_for_log(finished(generation_id, "completed"))
        await s.restart_gateway()
        await close_open_sockets()

        result = await resume(s.ws_url, generation_id, seq)

    assert result.close_code == 1000
    assert sorted(f["variantIndex"] for f in result.of("variantComplete")) == [0, 1]
    assert "</html>" in result.last_code(0)


async def test_resume_after_an_agent_restart_says_the_generation_was_interrupted(
    tmp_path: Path,
) -> None:
    async with suite(tmp_path) as s:
        generation_id, seq = await start_and_drop(s.ws_url, frames_wanted=5)
        await s.restart_agent()  # SIGKILL: the run is left "running" until the next start
        await s.restart_gateway()
        await close_open_sockets()

        result = await resume(s.ws_url, generation_id, seq)

    assert result.close_code == 4332
    assert [f["value"] for f in result.of("error")] == [INTERRUPTED]


async def test_retention_is_bounded_and_a_retired_generation_replays_its_record(
    tmp_path: Path,
) -> None:
    async with suite(tmp_path, S2C_DEMO_PACE_MS="0", S2C_RETAIN_GENERATIONS="2") as s:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{s.agent.port}") as channel:
            stub = pb_grpc.AgentServiceStub(channel)
            ids = [f"retention-{i}" for i in range(5)]
            for generation_id in ids:
                request = pb.GenerateCodeRequest(
                    generation_id=generation_id,
                    input_mode=pb.INPUT_MODE_TEXT,
                    prompt=pb.Prompt(text="a bakery"),
                )
                async for _ in stub.GenerateCode(request):
                    pass

            async def watch(generation_id: str) -> list[pb.GenerationEvent]:
                call = stub.WatchGeneration(
                    pb.WatchGenerationRequest(generation_id=generation_id, after_sequence=7)
                )
                return [e async for message in call for e in message.events]

            retired = await watch(ids[0])
            kept = await watch(ids[-1])

    # The oldest is no longer in memory: its record's final state, numbered on from 7.
    kinds = [e.WhichOneof("payload") for e in retired]
    assert kinds == [
        "variant_count",
        "code_snapshot",
        "variant_complete",
        "code_snapshot",
        "variant_complete",
        "generation_complete",
    ]
    assert [e.sequence for e in retired] == list(range(8, 14))
    assert "</html>" in retired[1].code_snapshot.content
    assert retired[-1].generation_complete.status == pb.RUN_STATUS_COMPLETED
    # The newest is still held: its live log, streamed deltas and all.
    kept_kinds = {e.WhichOneof("payload") for e in kept}
    assert {"code_delta", "tool_start", "generation_complete"} <= kept_kinds
