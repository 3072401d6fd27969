"""Which agent a generation goes to, and finding its owner again by name.

`S2C_AGENT_ADDR` lists the agents (`host:port,host:port`, or one target such as
`dns:///agent:50051`, which counts as one agent however many it resolves to). A new
generation goes to the next agent in turn; one that refuses it (busy, or down) passes
it to the next, and only when all refused is the browser told.

The agent that admits a generation names it `<agent name>-<32 hex>` (its own
`S2C_AGENT_NAME`), so the id says who holds its event log and record whatever order or
length the gateway's list has: a resume and a cancel go to the agent of that name. The
gateway learns its agents' names by asking them (`GetAgentInfo`), once, and again when
an id names an agent it does not know yet (one restarted under a new name, or added).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import grpc
from s2c.agent.v1 import agent_service_pb2 as pb
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc

from services.common.generation_ids import GENERATION_ID_HEADER as GENERATION_ID_HEADER
from services.common.generation_ids import owner_name as owner_name
from services.common.grpc_server import CHANNEL_OPTIONS
from services.common.security import GrpcSecurity, create_channel

log = logging.getLogger(__name__)

# How long asking the agents their names may take: a resume waits for it.
NAME_TIMEOUT_S = 5.0


class UnknownOwner(ValueError):
    """A generation id naming no agent this gateway can reach; the text says why."""


class OwnerUnreachable(UnknownOwner):
    """The id names no agent that answered, but some did not answer: the owner may be one
    of them, restarting. Worth retrying, unlike its base."""


@dataclass(frozen=True, slots=True)
class Agent:
    addr: str
    channel: grpc.aio.Channel

    @property
    def stub(self) -> pb_grpc.AgentServiceAsyncStub:
        return pb_grpc.AgentServiceStub(self.channel)


def agent_addrs(setting: str) -> list[str]:
    return [addr.strip() for addr in setting.split(",") if addr.strip()]


# An agent restarting (a rolling update) is back within seconds; gRPC's default reconnect
# backoff (up to 120 s) would keep its channel failing long after, and every resume to it
# with it. Reconnect attempts at most 2 s apart.
AGENT_CHANNEL_OPTIONS = (
    *CHANNEL_OPTIONS,
    ("grpc.initial_reconnect_backoff_ms", 250),
    ("grpc.max_reconnect_backoff_ms", 2000),
)
# How long a resume waits for its agent's channel (a restart under the same name) before
# the client is told to re-attach later.
RESUME_CONNECT_S = 5.0


class AgentPool:
    """One channel per configured agent; create it inside the running loop."""

    def __init__(self, setting: str, security: GrpcSecurity) -> None:
        addrs = agent_addrs(setting) or ["127.0.0.1:50051"]
        self.agents = [
            Agent(addr, create_channel(addr, security, AGENT_CHANNEL_OPTIONS)) for addr in addrs
        ]
        self._next = 0
        self._names: dict[str, Agent] = {}
        self._shared: set[str] = set()  # names several agents answered with
        self._asking: asyncio.Task[list[str]] | None = None

    def in_turn(self) -> list[Agent]:
        """Every agent, starting with the next one in round-robin order."""
        start = self._next % len(self.agents)
        self._next = start + 1
        return self.agents[start:] + self.agents[:start]

    async def reachable_owner(self, generation_id: str) -> Agent:
        """`owner`, once its channel is connected: OwnerUnreachable if it is not within
        RESUME_CONNECT_S (the agent is restarting, or down)."""
        agent = await self.owner(generation_id)
        try:
            async with asyncio.timeout(RESUME_CONNECT_S):
                await agent.channel.channel_ready()
        except TimeoutError:
            raise OwnerUnreachable(
                f"the agent at {agent.addr}, which holds generation {generation_id[:80]!r}, "
                f"did not answer within {RESUME_CONNECT_S:g} s"
            ) from None
        return agent

    async def owner(self, generation_id: str) -> Agent:
        """The agent that holds `generation_id`; UnknownOwner when no agent of ours has
        its name (or, with several agents, the id names none)."""
        name = owner_name(generation_id)
        shown = f"{generation_id[:80]!r}"
        if name is None:
            if len(self.agents) == 1:
                return self.agents[0]  # a client's own id: its agent, the only one
            raise UnknownOwner(
                f"generation {shown} names no agent (this gateway's generation ids are "
                "<agent name>-<32 hex digits>)"
            )
        if name not in self._names:
            unreachable = await self._learn_names()
            if name in self._shared:
                raise UnknownOwner(
                    f"generation {shown} belongs to agent {name!r}, but several of this "
                    "gateway's agents have that name: give each its own S2C_AGENT_NAME"
                )
            if name not in self._names:
                # The operator's detail goes to the log: any client may send any id, and
                # the names and addresses of the agents are not theirs to learn.
                log.warning(
                    "a generation id names no agent of this gateway",
                    extra={"agent": name, "known": sorted(self._names), "unreachable": unreachable},
                )
                message = (
                    f"generation {shown} belongs to agent {name!r}, which is not one of "
                    "this gateway's agents"
                )
                if unreachable:
                    message += " (or is one that does not answer now)"
                    raise OwnerUnreachable(message)
                raise UnknownOwner(message)
        return self._names[name]

    async def _learn_names(self) -> list[str]:
        """Asks every agent its name (one round at a time, shared by concurrent callers);
        the addresses that did not answer."""
        if self._asking is None or self._asking.done():
            self._asking = asyncio.create_task(self._ask_names())
        return await asyncio.shield(self._asking)

    async def _ask_names(self) -> list[str]:
        answers = await asyncio.gather(
            *(
                agent.stub.GetAgentInfo(pb.GetAgentInfoRequest(), timeout=NAME_TIMEOUT_S)
                for agent in self.agents
            ),
            return_exceptions=True,
        )
        found: dict[str, list[Agent]] = {}
        unreachable = []
        for agent, answer in zip(self.agents, answers, strict=True):
            if isinstance(answer, BaseException):
                unreachable.append(agent.addr)
            else:
                found.setdefault(answer.name, []).append(agent)
        # An agent that did not answer keeps the name it had: its generations' resumes
        # still go to it, and learn that it is unavailable.
        names = {name: a for name, a in self._names.items() if a.addr in unreachable}
        for name, agents in found.items():
            if len(agents) > 1:
                # A resume could reach the wrong one: neither is routed to by that name.
                log.error(
                    "agents share one name: give each its own S2C_AGENT_NAME",
                    extra={"agent_name": name, "agents": [a.addr for a in agents]},
                )
                names.pop(name, None)
            else:
                names[name] = agents[0]
        self._names = names
        self._shared = {name for name, agents in found.items() if len(agents) > 1}
        return unreachable

    async def close(self) -> None:
        if self._asking is not None:
            self._asking.cancel()
        for agent in self.agents:
            await agent.channel.close()
