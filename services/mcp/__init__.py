"""The suite as an MCP server: tools that are thin adapters over a gRPC client of the agent.

One implementation behind two transports: `s2c mcp` (stdio, `stdio.py`) and the gateway's
`/mcp` (Streamable HTTP, `services/gateway/mcp_route.py`). Imports only `services.common`
and the generated `s2c.*` packages, like the CLI: no second engine (docs/mcp.md).
"""
