"""The gateway's Prometheus metrics (served on its /metrics route)."""

from __future__ import annotations

from services.common.metrics import MetricsRegistry
from services.common.storage import StorageMetrics


class GatewayMetrics(MetricsRegistry):
    def __init__(self) -> None:
        super().__init__()
        self.connections = self.counter(
            "s2c_ws_connections_total", "WebSocket generations by how they ended", "outcome"
        )
        self.frames = self.counter("s2c_ws_frames_total", "Frames sent to browsers", "type")
        self.frame_bytes = self.counter(
            "s2c_ws_frame_bytes_total", "Bytes of frames sent to browsers", "type"
        )
        self.storage = StorageMetrics(self.registry)
