"""Who may use the gateway's MCP endpoint `/mcp` (docs/mcp.md, "Access").

- `S2C_MCP` (`on`, the default, or `off`): whether the gateway serves `/mcp`.
- `S2C_MCP_TOKEN`: the bearer token `/mcp` requires (`Authorization: Bearer <token>`;
  no query parameter: MCP clients send headers). Unset, `/mcp` takes `S2C_GATEWAY_TOKEN`
  when that is set, and is open otherwise, which only a loopback listener may be: a
  gateway that listens beyond loopback with `/mcp` on and no `S2C_MCP_TOKEN` refuses to
  start.
- Origins: a request with an `Origin` header is a browser acting for a page, which the
  MCP specification says to refuse unless trusted (DNS rebinding): only the origins of
  `S2C_ALLOWED_ORIGINS` pass, with or without a token. Requests without one pass.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from services.common import settings_env
from services.common.security import check_token

_OFF = frozenset({"0", "off", "false", "no"})


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True, repr=False)
class McpAccess:
    enabled: bool = True
    token: str = ""

    def __post_init__(self) -> None:
        check_token(self.token, "the MCP token (S2C_MCP_TOKEN)")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> McpAccess:
        env = settings_env.environ(env)
        return cls(
            enabled=env.get("S2C_MCP", "on").strip().lower() not in _OFF,
            token=env.get("S2C_MCP_TOKEN", "").strip(),
        )

    def check_listen(self, host: str) -> None:
        """ValueError when serving `/mcp` on `host` would leave it open beyond loopback."""
        if self.enabled and not self.token and not is_loopback(host):
            raise ValueError(
                f"the gateway listens on {host}, beyond loopback: set S2C_MCP_TOKEN to "
                "require a token on /mcp, or S2C_MCP=off to serve no MCP endpoint"
            )

    def __repr__(self) -> str:
        return f"McpAccess(enabled={self.enabled!r}, token={'<redacted>' if self.token else ''!r})"
