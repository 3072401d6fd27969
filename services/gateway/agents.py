"""Which agent a generation goes to, and finding its owner again.

`S2C_AGENT_ADDR` lists the agents (`host:port,host:port`, or one target such as
`dns:///agent:50051`, which counts as one agent however many it resolves to). A new
generation goes to the next agent in turn; one that refuses it (busy, or down) passes
it to the next, and only when all refused is the browser told. The gateway names the
generation `a<index>-<hex>`: the index of the agent that admitted it, so a resume and a
cancel go to that agent, which holds its event log (and, with SQLite, its record). An
id without that prefix belongs to agent 0, as every id did before there were several.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

import grpc
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.common.grpc_server import CHANNEL_OPTIONS
from services.common.security import GrpcSecurity, create_channel

_OWNED = re.compile(r"a(\d{1,4})-[0-9a-f]{32}")


class UnknownOwner(ValueError):
    """A generation id naming an agent this gateway does not have."""


@dataclass(frozen=True, slots=True)
class Agent:
    index: int
    addr: str
    channel: grpc.aio.Channel

    @property
    def stub(self) -> pb_grpc.AgentServiceAsyncStub:
        return pb_grpc.AgentServiceStub(self.channel)

    def new_generation_id(self) -> str:
        return f"a{self.index}-{uuid.uuid4().hex}"


def agent_addrs(setting: str) -> list[str]:
    return [addr.strip() for addr in setting.split(",") if addr.strip()]


class AgentPool:
    """One channel per configured agent; create it inside the running loop."""

    def __init__(self, setting: str, security: GrpcSecurity) -> None:
        addrs = agent_addrs(setting) or ["127.0.0.1:50051"]
        self.agents = [
            Agent(i, addr, create_channel(addr, security, CHANNEL_OPTIONS))
            for i, addr in enumerate(addrs)
        ]
        self._next = 0

    def in_turn(self) -> list[Agent]:
        """Every agent, starting with the next one in round-robin order."""
        start = self._next % len(self.agents)
        self._next = start + 1
        return self.agents[start:] + self.agents[:start]

    def owner(self, generation_id: str) -> Agent:
        """The agent that holds `generation_id`; UnknownOwner if it names no agent of ours."""
        match = _OWNED.fullmatch(generation_id)
        index = int(match.group(1)) if match else 0
        if index >= len(self.agents):
            raise UnknownOwner(
                f"generation {generation_id[:80]!r} belongs to agent {index}, but this "
                f"gateway has {len(self.agents)} agent(s) (S2C_AGENT_ADDR)"
            )
        return self.agents[index]

    async def close(self) -> None:
        for agent in self.agents:
            await agent.channel.close()
