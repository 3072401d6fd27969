"""The tool worker's Prometheus metrics (served on its metrics port)."""

from __future__ import annotations

from services.common.metrics import MetricsRegistry


class ToolsMetrics(MetricsRegistry):
    def __init__(self) -> None:
        super().__init__()
        self.tool_seconds = self.latency(
            "s2c_tool_execution_seconds", "Tool execution time on the worker", "tool", "ok"
        )
        # Set by each launch of the worker's Chromium (services/tools/browser_health.py).
        self.browser_healthy = self.gauge(
            "s2c_browser_healthy",
            "1 while the worker's Chromium launches, 0 after a failed launch (and while "
            "screenshots are off) until one succeeds",
        )
        self.browser_launch_failures = self.counter(
            "s2c_browser_launch_failures_total",
            "Launches of the worker's Chromium (or of its Playwright driver) that failed",
        )
