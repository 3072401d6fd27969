"""The tool worker's Prometheus metrics (served on its metrics port)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Histogram

from services.common.metrics import LATENCY_BUCKETS


class ToolsMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.tool_seconds = Histogram(
            "s2c_tool_execution_seconds",
            "Tool execution time on the worker",
            ["tool", "ok"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
