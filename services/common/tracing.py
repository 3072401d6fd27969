"""OpenTelemetry traces across gateway → agent → tools, carried in gRPC metadata.

Propagation (W3C `traceparent`) is always on, so a trace started by a caller — or by
our gateway — continues through every hop. Recording is off unless
`S2C_OTEL_EXPORTER=console` (spans printed as JSON on stderr) is set; deployments that
ship spans elsewhere install their exporter and set their own tracer provider.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

Metadata = list[tuple[str, str]]


def setup_tracing(service: str, env: Mapping[str, str] | None = None) -> None:
    """Installs a recording tracer provider when an exporter is configured."""
    env = os.environ if env is None else env
    if env.get("S2C_OTEL_EXPORTER", "").strip().lower() != "console":
        return
    provider = TracerProvider(resource=Resource.create({"service.name": f"s2c-{service}"}))
    provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    trace.set_tracer_provider(provider)


def tracer(name: str) -> trace.Tracer:
    return trace.get_tracer(name)


def outgoing_metadata() -> Metadata:
    """The current trace context as gRPC metadata for the next hop."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return list(carrier.items())


def incoming_context(metadata: Iterable[tuple[str, str | bytes]] | None) -> otel_context.Context:
    """The caller's trace context from gRPC invocation metadata."""
    carrier = {
        key: value if isinstance(value, str) else value.decode("latin-1")
        for key, value in (metadata or ())
    }
    return propagate.extract(carrier)
