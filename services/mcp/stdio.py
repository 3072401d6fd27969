"""`s2c mcp`: the MCP server over stdio, for a local agent to start
(`claude mcp add s2c -- s2c mcp`). Stdout is the protocol: logs go to stderr."""

from __future__ import annotations

from services.mcp.agents import SingleAgent
from services.mcp.server import build_server
from services.mcp.settings import McpSettings


async def serve_stdio(settings: McpSettings) -> None:
    """Serves one client on stdin/stdout until it closes them."""
    route = SingleAgent(settings.agent_addr, settings.grpc_security)  # inside the loop
    try:
        await build_server(settings, route).run_stdio_async()
    finally:
        await route.close()
