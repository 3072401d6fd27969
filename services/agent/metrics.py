"""The agent's Prometheus metrics (served on its metrics port)."""

from __future__ import annotations

from services.common.metrics import MetricsRegistry
from services.common.storage import StorageMetrics


class AgentMetrics(MetricsRegistry):
    def __init__(self) -> None:
        super().__init__()
        self.generations = self.counter(
            "s2c_generations_total", "Generations by outcome", "outcome"
        )
        self.variants = self.counter(
            "s2c_variants_total", "Variants by provider and outcome", "provider", "outcome"
        )
        self.tool_seconds = self.latency(
            "s2c_agent_tool_call_seconds",
            "Tool call latency seen by the agent (network included)",
            "tool",
            "ok",
        )
        self.tokens = self.counter("s2c_tokens_total", "Model tokens", "provider", "kind")
        self.cost = self.counter("s2c_cost_usd_total", "Model cost in US dollars", "provider")
        self.events_sent = self.counter(
            "s2c_agent_events_sent_total", "GenerationEvents sent to clients, over every stream"
        )
        self.retained_generations = self.gauge(
            "s2c_agent_retained_generations",
            "Finished generations kept in memory for re-attaching clients",
        )
        self.retained_bytes = self.gauge(
            "s2c_agent_retained_bytes", "Approximate memory held by the retained generations"
        )
        self.storage = StorageMetrics(self.registry)
