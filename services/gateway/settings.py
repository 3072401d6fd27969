"""The gateway's settings: read once from the environment, then passed down."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class GatewaySettings:
    host: str = "127.0.0.1"
    port: int = 7001
    agent_addr: str = "127.0.0.1:50051"
    data_dir: Path = Path(".s2c-data")
    # setCode policy (see preview_policy.py)
    preview_min_chars: int = 40
    preview_min_interval_s: float = 0.2
    preview_max_bytes_per_s: int = 1_000_000
    # Consecutive thinking/assistant deltas of one message within this window go out as one frame.
    coalesce_s: float = 0.05
    # The params frame carries screenshots and videos as data URLs.
    max_frame_bytes: int = 50 * 1024 * 1024
    params_timeout_s: float = 60.0
    screenshot_available: bool = True
    # How long a dropped resumable browser's generation keeps running, waiting for it.
    resume_grace_s: float = 30.0
    # A frame the browser has not taken within this time disconnects it.
    send_timeout_s: float = 30.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> GatewaySettings:
        env = os.environ if env is None else env
        values: dict[str, object] = {
            "agent_addr": env.get("S2C_AGENT_ADDR", "127.0.0.1:50051"),
            "data_dir": Path(env.get("S2C_DATA_DIR", ".s2c-data")),
            "max_frame_bytes": int(env.get("S2C_MAX_FRAME_BYTES", str(50 * 1024 * 1024))),
            "preview_min_interval_s": int(env.get("S2C_PREVIEW_INTERVAL_MS", "200")) / 1000,
            "preview_max_bytes_per_s": int(env.get("S2C_PREVIEW_MAX_BPS", "1000000")),
        }
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]
