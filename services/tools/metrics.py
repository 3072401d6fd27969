"""The tool worker's Prometheus metrics (served on its metrics port)."""

from __future__ import annotations

from services.common.metrics import MetricsRegistry


class ToolsMetrics(MetricsRegistry):
    def __init__(self) -> None:
        super().__init__()
        self.tool_seconds = self.latency(
            "s2c_tool_execution_seconds", "Tool execution time on the worker", "tool", "ok"
        )
