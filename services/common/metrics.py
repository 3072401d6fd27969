"""Prometheus metrics: one registry per service object, served on /metrics.

Labels never carry user data or keys: only fixed vocabularies (outcome, provider,
tool name, token kind).
"""

from __future__ import annotations

import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.exposition import generate_latest

from services.common.storage import StorageMetrics

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


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
        self.storage = StorageMetrics(self.registry)


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


def render(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)


def serve_metrics(
    registry: CollectorRegistry, host: str, port: int
) -> tuple[WSGIServer, threading.Thread]:
    """/metrics on its own port for the gRPC services (they have no HTTP server)."""
    return start_http_server(port, addr=host, registry=registry)
