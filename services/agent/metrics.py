"""The agent's Prometheus metrics (served on its metrics port)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from services.common.metrics import LATENCY_BUCKETS
from services.common.storage import StorageMetrics


class AgentMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.generations = Counter(
            "s2c_generations_total", "Generations by outcome", ["outcome"], registry=self.registry
        )
        self.variants = Counter(
            "s2c_variants_total",
            "Variants by provider and outcome",
            ["provider", "outcome"],
            registry=self.registry,
        )
        self.tool_seconds = Histogram(
            "s2c_agent_tool_call_seconds",
            "Tool call latency seen by the agent (network included)",
            ["tool", "ok"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.tokens = Counter(
            "s2c_tokens_total", "Model tokens", ["provider", "kind"], registry=self.registry
        )
        self.cost = Counter(
            "s2c_cost_usd_total", "Model cost in US dollars", ["provider"], registry=self.registry
        )
        self.events_sent = Counter(
            "s2c_agent_events_sent_total",
            "GenerationEvents sent to clients, over every stream",
            registry=self.registry,
        )
        self.retained_generations = Gauge(
            "s2c_agent_retained_generations",
            "Finished generations kept in memory for re-attaching clients",
            registry=self.registry,
        )
        self.retained_bytes = Gauge(
            "s2c_agent_retained_bytes",
            "Approximate memory held by the retained generations",
            registry=self.registry,
        )
        self.storage = StorageMetrics(self.registry)
