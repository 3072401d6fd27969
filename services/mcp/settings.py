"""The MCP server's settings: read once, then passed down."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from services.common import settings_env
from services.common.security import GrpcSecurity

DEFAULT_AGENT_ADDR = "127.0.0.1:50051"


@dataclass(frozen=True, slots=True)
class McpSettings:
    # The agent `s2c mcp` dials (`S2C_AGENT_ADDR`, first address); the gateway's /mcp uses
    # the gateway's own agent pool instead.
    agent_addr: str = DEFAULT_AGENT_ADDR
    grpc_security: GrpcSecurity = field(default_factory=GrpcSecurity)
    # Whether a screenshot may name a file on this machine. Only for stdio, where the
    # caller is a local agent that could read the file itself; over HTTP a path would let
    # a remote client read the gateway's disk.
    read_files: bool = False
    # Unary calls to the agent (run records, models, cancel); a URL capture has its own
    # deadline on the tool workers and gets this plus that.
    call_timeout_s: float = 30.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, read_files: bool) -> McpSettings:
        env = settings_env.environ(env)
        addrs = [a.strip() for a in env.get("S2C_AGENT_ADDR", "").split(",") if a.strip()]
        return cls(
            agent_addr=addrs[0] if addrs else DEFAULT_AGENT_ADDR,
            grpc_security=GrpcSecurity.from_env(env),
            read_files=read_files,
        )
