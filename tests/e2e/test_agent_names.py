"""Generations are owned by name: gateways that list their agents in any order (or list
more of them) still resume every generation at the agent that holds it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from aiohttp import web
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.agent.server import AgentServer
from services.agent.settings import AgentSettings, checked_agent_name, default_agent_name
from services.gateway.access import AccessSettings
from services.gateway.agents import owner_name
from services.gateway.app import create_app
from services.gateway.settings import GatewaySettings
from services.tools.server import ToolsServer
from services.tools.settings import ToolsSettings
from tests.suite import Socket, create_params


@dataclass
class Fleet:
    agents: list[AgentServer]  # in the order of their names
    gateways: list[str]  # WebSocket URLs


async def _gateway(stack: AsyncExitStack, data_dir: Path, agent_addr: str) -> str:
    settings = GatewaySettings(
        access=AccessSettings(
            max_concurrent_per_client=0, starts_per_minute=0, max_waiting_per_client=0
        ),
        port=0,
        agent_addr=agent_addr,
        data_dir=data_dir,
    )
    runner = web.AppRunner(create_app(settings))
    await runner.setup()
    stack.push_async_callback(runner.cleanup)
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return f"ws://127.0.0.1:{runner.addresses[0][1]}/generate-code"


@asynccontextmanager
async def fleet(
    data_dir: Path, names: tuple[str, ...], orders: list[list[int]], pace_s: float = 0.0
) -> AsyncIterator[Fleet]:
    """One tool worker, an agent per name (each its own store), and a gateway per order
    of those agents (positions in `names`)."""
    async with AsyncExitStack() as stack:
        tools = ToolsServer(
            ToolsSettings(screenshots_enabled=False, listen="127.0.0.1:0", data_dir=data_dir)
        )
        await tools.start()
        stack.push_async_callback(tools.stop)
        agents: list[AgentServer] = []
        for i, name in enumerate(names):
            settings = AgentSettings(
                agent_name=name,
                demo_pace_s=pace_s,
                listen="127.0.0.1:0",
                tools_addr=f"127.0.0.1:{tools.port}",
                data_dir=data_dir / f"agent-{i}",
            )
            agent = AgentServer(settings)
            await agent.start()
            stack.push_async_callback(agent.stop, 0.0)
            agents.append(agent)
        gateways = [
            await _gateway(stack, data_dir, ",".join(f"127.0.0.1:{agents[i].port}" for i in order))
            for order in orders
        ]
        yield Fleet(agents, gateways)


async def test_a_generation_started_on_one_gateway_resumes_and_ends_through_another(
    tmp_path: Path,
) -> None:
    # The two gateways list the agents in opposite orders: a position would name a
    # different agent on each.
    # Paced, so the generation still runs when its first socket drops.
    async with fleet(tmp_path, ("north", "south"), [[0, 1], [1, 0]], pace_s=0.005) as f:
        first = await Socket.open(f.gateways[0], create_params(resumable=True))
        generation_id = await first.generation_id()
        owner = owner_name(generation_id)
        assert owner == "north"  # the first gateway's first agent took it
        await first.frame("setCode")
        after = max(frame.get("seq", 0) for frame in first.frames)
        await first.close(1001)  # going away: the first gateway holds the generation

        resumed = await Socket.open(
            f.gateways[1], {"resumeGenerationId": generation_id, "afterSequence": after}
        )
        assert await resumed.end() == 1000, resumed.frames[-3:]
        assert {frame["variantIndex"] for frame in resumed.of("variantComplete")} == {0, 1}
        # After the whole code (whose frames carry their code's own seq), only what came
        # after the last frame seen.
        later = [f["seq"] for f in resumed.frames if "seq" in f and f["type"] != "setCode"]
        assert min(later) > after
        # It ran (and ended) at its owner only.
        north, south = f.agents
        held = north.manager.get(generation_id)
        assert held is not None
        assert held.status == "completed"
        assert south.manager.get(generation_id) is None

        # An id naming an agent neither gateway has is refused, without naming those that
        # exist (issue 35: any client may send any id; the names are the operator's).
        stray = await Socket.open(
            f.gateways[1], {"resumeGenerationId": f"west-{'0' * 32}", "afterSequence": 0}
        )
        assert await stray.end() == 4332
        [error] = stray.of("error")
        assert "belongs to agent 'west', which is not one of this gateway's" in error["value"]
        assert "north" not in error["value"]
        assert "south" not in error["value"]


async def test_agents_sharing_a_name_are_refused_rather_than_guessed(tmp_path: Path) -> None:
    async with fleet(tmp_path, ("twin", "twin"), [[0, 1]]) as f:
        stray = await Socket.open(
            f.gateways[0], {"resumeGenerationId": f"twin-{'0' * 32}", "afterSequence": 0}
        )
        assert await stray.end() == 4332
        [error] = stray.of("error")
        assert "several of this gateway's agents have that name" in error["value"]


async def test_an_agent_says_its_name_and_mints_ids_with_it(tmp_path: Path) -> None:
    async with fleet(tmp_path, ("solo",), []) as f:
        port = f.agents[0].port
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.AgentServiceStub(channel)
            info = await stub.GetAgentInfo(pb.GetAgentInfoRequest())
            call = stub.GenerateCode(
                pb.GenerateCodeRequest(
                    input_mode=pb.INPUT_MODE_TEXT, prompt=pb.Prompt(text="x"), variant_count=1
                )
            )
            headers = dict(await call.initial_metadata())
            async for _ in call:
                pass
    assert info.name == "solo"
    assert owner_name(str(headers["s2c-generation-id"])) == "solo"


def test_agent_names_are_checked_and_the_default_is_a_valid_one() -> None:
    assert checked_agent_name(default_agent_name()) == default_agent_name()
    assert AgentSettings.from_env({"S2C_AGENT_NAME": "agent-3"}).agent_name == "agent-3"
    for bad in ("agent.0", "a" * 32, "two words"):
        with pytest.raises(ValueError, match="S2C_AGENT_NAME must be 1-31 letters"):
            AgentSettings.from_env({"S2C_AGENT_NAME": bad})
