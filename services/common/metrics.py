"""Prometheus plumbing every service uses: the latency buckets and the /metrics exposition.

Each service declares its own metrics class next to its code (`services/<name>/metrics.py`),
one registry per service object. Labels never carry user data or keys: only fixed
vocabularies (outcome, provider, tool name, token kind).
"""

from __future__ import annotations

import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.exposition import generate_latest

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class MetricsRegistry:
    """A service's own registry; its metrics class declares one metric a line through
    these, so each metric is registered here and nowhere else (no global registry)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()

    def counter(self, name: str, doc: str, *labels: str) -> Counter:
        return Counter(name, doc, labels, registry=self.registry)

    def gauge(self, name: str, doc: str, *labels: str) -> Gauge:
        return Gauge(name, doc, labels, registry=self.registry)

    def latency(self, name: str, doc: str, *labels: str) -> Histogram:
        return Histogram(name, doc, labels, buckets=LATENCY_BUCKETS, registry=self.registry)


def render(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)


def serve_metrics(
    registry: CollectorRegistry, host: str, port: int
) -> tuple[WSGIServer, threading.Thread]:
    """/metrics on its own port for the gRPC services (they have no HTTP server)."""
    return start_http_server(port, addr=host, registry=registry)
