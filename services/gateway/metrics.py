"""The gateway's Prometheus metrics (served on its /metrics route)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from services.common.storage import StorageMetrics


class GatewayMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.connections = Counter(
            "s2c_ws_connections_total",
            "WebSocket generations by how they ended",
            ["outcome"],
            registry=self.registry,
        )
        self.frames = Counter(
            "s2c_ws_frames_total", "Frames sent to browsers", ["type"], registry=self.registry
        )
        self.frame_bytes = Counter(
            "s2c_ws_frame_bytes_total",
            "Bytes of frames sent to browsers",
            ["type"],
            registry=self.registry,
        )
        self.storage = StorageMetrics(self.registry)
