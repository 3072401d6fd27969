"""Several agents behind one gateway, and admission control, on real processes.

Two agent processes (each with its own SQLite run store, as `s2c up` runs them) behind
one gateway: new generations go to the agents in turn and carry their owner's name in
their id, a resume and a cancel reach the owner, and an agent at its bound refuses at once
(RESOURCE_EXHAUSTED), after which the gateway tries the other agent and, when both are
full, the browser gets a "busy" `error` frame and 4332. Every socket ends with its
result or an error frame: none with a bare close.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from services import cli
from services.gateway.agents import owner_name
from tests.processes import Service, base_env, start_service
from tests.suite import Socket, create_params

METRICS = ["--metrics-listen", "127.0.0.1:0"]


@dataclass
class Suite:
    tools: Service
    agents: list[Service]
    gateway: Service

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.gateway.port}/generate-code"


@asynccontextmanager
async def agents_behind_a_gateway(
    data_dir: Path, count: int = 2, **extra: str
) -> AsyncIterator[Suite]:
    # The tool worker takes no screenshots: routing and admission are what these tests
    # check, and Chromium rendering every variant was most of their time.
    env = base_env(data_dir, {"S2C_SCREENSHOTS": "0", **extra})
    tools = await start_service("tools", ["--listen", "127.0.0.1:0", *METRICS], env)

    def agent_env(i: int) -> dict[str, str]:
        return {
            **env,
            "S2C_TOOLS_ADDR": f"127.0.0.1:{tools.port}",
            "S2C_DATA_DIR": str(data_dir / f"agent-{i}"),
            "S2C_AGENT_NAME": f"agent-{i}",  # as `s2c up` names them
        }

    # The agents need only the tool worker's port: started together, not in turn.
    async with asyncio.TaskGroup() as group:
        starting = [
            group.create_task(
                start_service("agent", ["--listen", "127.0.0.1:0", *METRICS], agent_env(i))
            )
            for i in range(count)
        ]
    agents = [task.result() for task in starting]
    addrs = ",".join(f"127.0.0.1:{a.port}" for a in agents)
    gateway = await start_service("gateway", ["--port", "0"], {**env, "S2C_AGENT_ADDR": addrs})
    suite = Suite(tools, agents, gateway)
    try:
        yield suite
    finally:
        for service in (gateway, *agents, tools):
            if service.process.returncode is None:
                service.process.kill()
                await service.process.wait()


def logged(msg: str, generation_id: str, **fields: Any) -> Any:
    return lambda r: (
        r.get("msg") == msg
        and r.get("generation_id") == generation_id
        and all(r.get(k) == v for k, v in fields.items())
    )


def owner_index(generation_id: str) -> int:
    name = owner_name(generation_id)
    assert name is not None, generation_id
    assert name.startswith("agent-"), generation_id
    return int(name.removeprefix("agent-"))


def assert_completed(socket: Socket, close_code: int | None) -> None:
    assert close_code == 1000, socket.frames[-3:]
    variants = {f["variantIndex"] for f in socket.of("variantComplete")}
    assert variants == {0, 1}, socket.frames[-3:]


async def test_generations_spread_over_both_agents_and_resume_and_cancel_reach_the_owner(
    tmp_path: Path,
) -> None:
    # Paced, so a generation is still running when its socket drops.
    async with agents_behind_a_gateway(tmp_path, S2C_DEMO_PACE_MS="20") as suite:
        ids = []
        for _ in range(2):
            socket = await Socket.open(suite.ws_url, create_params(resumable=True))
            ids.append(await socket.generation_id())
            assert_completed(socket, await socket.end())
        assert sorted(owner_index(i) for i in ids) == [0, 1]
        for generation_id in ids:
            owner = suite.agents[owner_index(generation_id)]
            await owner.wait_for_log(logged("generation finished", generation_id))
            other = suite.agents[1 - owner_index(generation_id)]
            assert not [line for line in other.log if generation_id in line]

        # A resume: the dropped socket's generation runs on at its owner, and the new
        # socket gets the rest of it from there.
        first = await Socket.open(suite.ws_url, create_params(resumable=True))
        generation_id = await first.generation_id()
        await first.frame("setCode")
        after = max(f.get("seq", 0) for f in first.frames)
        await first.close(1001)  # going away: the gateway holds the generation
        resumed = await Socket.open(
            suite.ws_url, {"resumeGenerationId": generation_id, "afterSequence": after}
        )
        assert_completed(resumed, await resumed.end())
        owner = suite.agents[owner_index(generation_id)]
        await owner.wait_for_log(logged("generation finished", generation_id, status="completed"))

        # A cancel: a resumed socket closed with 4333 while the dropped one still holds
        # the generation, so only CancelGeneration at the owner can end it now.
        first = await Socket.open(suite.ws_url, create_params(resumable=True))
        generation_id = await first.generation_id()
        await first.frame("setCode")
        after = max(f.get("seq", 0) for f in first.frames)
        await first.close(1001)
        resumed = await Socket.open(
            suite.ws_url, {"resumeGenerationId": generation_id, "afterSequence": after}
        )
        await resumed.frame("setCode")
        await resumed.close(4333)
        owner = suite.agents[owner_index(generation_id)]
        await owner.wait_for_log(logged("generation finished", generation_id, status="cancelled"))

        # An id naming an agent this gateway does not have is refused, saying why.
        stray = await Socket.open(
            suite.ws_url, {"resumeGenerationId": f"agent-7-{'0' * 32}", "afterSequence": 0}
        )
        assert await stray.end() == 4332
        refusal = stray.of("error")[0]["value"]
        assert "belongs to agent 'agent-7', which is not one of this gateway's" in refusal
        # Without listing the agents it has: their names are the operator's (issue 35).
        assert "agent-0" not in refusal
        assert "agent-1" not in refusal


async def test_full_agents_refuse_at_once_and_the_gateway_tries_the_other_first(
    tmp_path: Path,
) -> None:
    # One demo generation (two variants) fills an agent; a slow pace keeps it running
    # until the test ends it.
    async with agents_behind_a_gateway(
        tmp_path, S2C_DEMO_PACE_MS="300", S2C_MAX_RUNNING_VARIANTS="2"
    ) as s:
        one = await Socket.open(s.ws_url, create_params(resumable=True))
        one_id = await one.generation_id()  # admitted: sent once the agent took it
        two = await Socket.open(s.ws_url, create_params(resumable=True))
        two_id = await two.generation_id()
        assert {owner_index(one_id), owner_index(two_id)} == {0, 1}

        # Both full: refused at once, while both admitted generations still run.
        three = await Socket.open(s.ws_url, create_params(resumable=True))
        assert await three.end() == 4332
        assert not three.of("generation")
        [error] = three.of("error")
        assert error["value"].startswith("The agent is busy ("), error
        assert error["value"].endswith("Please retry in a moment."), error
        for agent in s.agents:
            await agent.wait_for_log(lambda r: r.get("msg") == "generation refused: busy")
        assert not one.ws.closed
        assert not two.ws.closed

        # The agent of `one` has room again; the next generation may be offered to the
        # other (still full) first, and is then admitted by this one.
        free = owner_index(one_id)
        await one.close(4333)
        await s.agents[free].wait_for_log(logged("generation finished", one_id))
        four = await Socket.open(s.ws_url, create_params(resumable=True))
        four_id = await four.generation_id()
        assert owner_index(four_id) == free

        # The admitted ones end as their clients asked: cancelled, at their owners.
        for socket, generation_id in ((two, two_id), (four, four_id)):
            await socket.close(4333)
            owner = s.agents[owner_index(generation_id)]
            await owner.wait_for_log(
                logged("generation finished", generation_id, status="cancelled")
            )


async def test_an_agent_limit_below_one_generation_admits_it_alone_and_refuses_the_next(
    tmp_path: Path,
) -> None:
    # One agent whose bound (1 variant) is below a demo generation's 2: the first runs
    # alone and completes; a second, sent while it surely runs, is refused at once.
    async with agents_behind_a_gateway(
        tmp_path, 1, S2C_DEMO_PACE_MS="20", S2C_MAX_RUNNING_VARIANTS="1"
    ) as s:
        first = await Socket.open(s.ws_url, create_params(resumable=True))
        first_id = await first.generation_id()
        await first.frame("setCode")
        busy = await Socket.open(s.ws_url, create_params())
        assert await busy.end() == 4332
        [error] = busy.frames
        assert error["type"] == "error"
        assert error["value"].startswith("The agent is busy (2 of at most 1 variants"), error
        assert error["value"].endswith("Please retry in a moment."), error
        assert not first.ws.closed
        await s.agents[0].wait_for_log(lambda r: r.get("msg") == "generation refused: busy")
        # Nothing ends silently: the admitted one completes, every variant with it.
        assert_completed(first, await first.end())
        await s.agents[0].wait_for_log(logged("generation finished", first_id, status="completed"))


def test_up_runs_one_agent_per_core_each_with_its_own_port_and_run_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("S2C_AGENTS", raising=False)
    assert cli._agent_count(None) == (os.cpu_count() or 1)
    assert cli._agent_count(3) == 3
    monkeypatch.setenv("S2C_AGENTS", "2")
    assert cli._agent_count(None) == 2
    for bad, message in (("two", "S2C_AGENTS must be a whole number"), ("0", "at least 1")):
        monkeypatch.setenv("S2C_AGENTS", bad)
        with pytest.raises(ValueError, match=message):
            cli._agent_count(None)

    args = cli.build_parser().parse_args(["up", "--agents", "2"])
    args.agents = cli._agent_count(args.agents)
    env = {"S2C_DATA_DIR": "/data"}
    zero, one = cli._agent_specs(args, ["s2c"], env)
    assert zero.command[zero.command.index("--listen") + 1] == "127.0.0.1:50051"
    assert one.command[one.command.index("--listen") + 1] == "127.0.0.1:50151"
    assert one.command[one.command.index("--metrics-listen") + 1] == "127.0.0.1:9201"
    assert (zero.env["S2C_AGENT_NAME"], one.env["S2C_AGENT_NAME"]) == ("agent-0", "agent-1")
    assert zero.env["S2C_DATA_DIR"] == "/data"
    assert one.env["S2C_DATA_DIR"] == str(Path("/data") / "agent-1")
    # A shared PostgreSQL store: every agent keeps the one data directory.
    shared = {**env, "S2C_DATABASE_URL": "postgresql://db/s2c"}
    assert {s.env["S2C_DATA_DIR"] for s in cli._agent_specs(args, ["s2c"], shared)} == {"/data"}
