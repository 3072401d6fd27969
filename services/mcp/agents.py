"""Which agent a tool call talks to: any for a new generation, the owner for an old one."""

from __future__ import annotations

from typing import Protocol

import grpc
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.common.grpc_server import CHANNEL_OPTIONS
from services.common.security import GrpcSecurity, create_channel


class AgentRoute(Protocol):
    """The agents behind the MCP tools. `in_turn`: every agent, the next one in
    round-robin order first (a new generation goes to the first that admits it; any
    other call to the first). `owner` raises ValueError, saying why, for a generation id
    that names no reachable agent."""

    def in_turn(self) -> list[pb_grpc.AgentServiceAsyncStub]: ...

    async def owner(self, generation_id: str) -> pb_grpc.AgentServiceAsyncStub: ...


class SingleAgent:
    """One agent over one channel (`s2c mcp`, like `s2c generate`); create it in the loop."""

    def __init__(self, addr: str, security: GrpcSecurity) -> None:
        self.channel: grpc.aio.Channel = create_channel(addr, security, CHANNEL_OPTIONS)
        self._stub = pb_grpc.AgentServiceStub(self.channel)

    def in_turn(self) -> list[pb_grpc.AgentServiceAsyncStub]:
        return [self._stub]

    async def owner(self, generation_id: str) -> pb_grpc.AgentServiceAsyncStub:
        return self._stub

    async def close(self) -> None:
        await self.channel.close()
