"""The gateway's settings: read once from the environment, then passed down."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from services.common import settings_env
from services.common.security import GrpcSecurity
from services.common.vendor import DEFAULT_VENDOR_DIR, vendor_dir_from_env
from services.gateway.access import AccessSettings
from services.gateway.design_systems import DesignSystemLimits
from services.gateway.export import ExportPolicy

_SECONDS = "number of seconds"


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

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> GatewaySettings:
        env = settings_env.environ(env)
        return cls(
            agent_addr=env.get("S2C_AGENT_ADDR", "127.0.0.1:50051"),
            **settings_env.service_fields(env),
            access=AccessSettings.from_env(env),
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
            drain_s=settings_env.seconds(env, "S2C_DRAIN_S", _default_drain_s(env)),
        )


def _default_drain_s(env: Mapping[str, str]) -> float:
    """The agents' generation deadline (S2C_MAX_GENERATION_S, the same variable) and 30 s
    more, so a drain with the defaults never cuts a generation that could still end."""
    return settings_env.positive(env, "S2C_MAX_GENERATION_S", 900.0, unit=_SECONDS) + 30
