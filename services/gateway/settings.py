"""The gateway's settings: read once from the environment, then passed down."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from services.common import settings_env
from services.common.project_limits import DEFAULT_MAX_PROJECT_FILES, FILES_ENV
from services.common.security import GrpcSecurity
from services.common.vendor import DEFAULT_VENDOR_DIR, vendor_dir_from_env
from services.gateway.access import AccessSettings
from services.gateway.design_systems import DesignSystemLimits
from services.gateway.export import ExportPolicy
from services.gateway.mcp_access import McpAccess

_SECONDS = "number of seconds"
_TRUE = frozenset({"1", "true", "yes", "on"})


@dataclass(frozen=True, slots=True)
class GatewaySettings:
    host: str = "127.0.0.1"
    port: int = 7001
    agent_addr: str = "127.0.0.1:50051"
    data_dir: Path = Path(".s2c-data")
    # setCode policy (see preview_policy.py)
    preview_min_chars: int = 40
    preview_min_interval_s: float = 0.05  # the floor; the interval grows with the frame
    preview_max_bytes_per_s: int = 1_000_000
    grpc_security: GrpcSecurity = field(default_factory=GrpcSecurity)
    # Token, origins, per-client limits and the frame size (params carry videos).
    access: AccessSettings = field(default_factory=AccessSettings)
    # A socket that has not sent its params by then gets an error frame and 4332.
    params_timeout_s: float = 10.0
    # Closes a connection that has not sent a complete request within this time of
    # connecting, or stays idle this long between requests (half-sent headers included).
    http_idle_timeout_s: float = 15.0
    # On SIGTERM, how long upstream-protocol sockets (which cannot resume) may go on for
    # their generations to end (drain.py): past the agent's longest generation deadline.
    drain_s: float = 930.0
    # A frame the browser has not taken within this time disconnects it.
    send_timeout_s: float = 30.0
    # Count, per-system and total size of the saved design systems.
    design_systems: DesignSystemLimits = field(default_factory=DesignSystemLimits)
    # `/api/export`: its body limit, transform time budget and asset limits.
    export: ExportPolicy = field(default_factory=ExportPolicy)
    # The vendored CDN copies served at /vendor/ and bundled by exports (S2C_VENDOR_DIR).
    vendor_dir: Path = DEFAULT_VENDOR_DIR
    # The most files an update's `files` and an export may hold (S2C_MAX_PROJECT_FILES,
    # the agents' bound too): checked before any file is looked at; 0: no bound.
    max_project_files: int = DEFAULT_MAX_PROJECT_FILES
    # Score the generations of sockets that did not ask for scores (the upstream UI), for
    # the run record (S2C_SCORE_UNASKED); such a socket still closes as its variants end.
    score_unasked: bool = False
    # `/mcp`: on or off, and its token (mcp_access.py).
    mcp: McpAccess = field(default_factory=McpAccess)

    def __post_init__(self) -> None:
        # Here, not in from_env: `s2c gateway --host` replaces the host after reading.
        self.mcp.check_listen(self.host)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> GatewaySettings:
        env = settings_env.environ(env)
        return cls(
            agent_addr=env.get("S2C_AGENT_ADDR", "127.0.0.1:50051"),
            **settings_env.service_fields(env),
            access=AccessSettings.from_env(env),
            mcp=McpAccess.from_env(env),
            design_systems=DesignSystemLimits.from_env(env),
            export=ExportPolicy.from_env(env),
            vendor_dir=vendor_dir_from_env(env),
            preview_min_interval_s=int(env.get("S2C_PREVIEW_INTERVAL_MS", "50")) / 1000,
            preview_max_bytes_per_s=int(env.get("S2C_PREVIEW_MAX_BPS", "1000000")),
            params_timeout_s=settings_env.positive(
                env, "S2C_PARAMS_TIMEOUT_S", 10.0, unit=_SECONDS
            ),
            http_idle_timeout_s=settings_env.positive(
                env, "S2C_HTTP_IDLE_TIMEOUT_S", 15.0, unit=_SECONDS
            ),
            max_project_files=settings_env.bound(
                env, FILES_ENV, str(DEFAULT_MAX_PROJECT_FILES), int
            ),
            score_unasked=env.get("S2C_SCORE_UNASKED", "0").strip().lower() in _TRUE,
            drain_s=settings_env.seconds(env, "S2C_DRAIN_S", _default_drain_s(env)),
        )


def _default_drain_s(env: Mapping[str, str]) -> float:
    """The agents' generation deadline (S2C_MAX_GENERATION_S, the same variable) and 30 s
    more, so a drain with the defaults never cuts a generation that could still end."""
    return settings_env.positive(env, "S2C_MAX_GENERATION_S", 900.0, unit=_SECONDS) + 30
