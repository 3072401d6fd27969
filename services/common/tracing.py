"""OpenTelemetry traces across gateway → agent → tools, carried in gRPC metadata.

Propagation (W3C `traceparent`) is always on: a process that records nothing still passes
the caller's trace context on to the next hop. Every service process calls `setup_tracing`
once at startup (`services/cli.py`), so `S2C_OTEL_EXPORTER=console` records spans in all
of them; without it nothing is recorded, and a trace starts only where a caller sent one.
Deployments that ship spans elsewhere install their exporter and set their own provider.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

Metadata = list[tuple[str, str]]

EXPORTERS = ("", "none", "console")


def setup_tracing(service: str, env: Mapping[str, str] | None = None) -> None:
    """Installs a recording tracer provider when `S2C_OTEL_EXPORTER=console`.

    Each finished span is one JSON line on stdout. The logs go to stderr, so spans and
    log lines never share a stream and each stays one parseable line. The batch
    processor flushes on its own schedule and when the process exits.
    """
    env = os.environ if env is None else env
    exporter = env.get("S2C_OTEL_EXPORTER", "").strip().lower()
    if exporter not in EXPORTERS:
        raise ValueError(f"S2C_OTEL_EXPORTER must be 'console', 'none' or unset, got {exporter!r}")
    if exporter != "console":
        return
    provider = TracerProvider(resource=Resource.create({"service.name": f"s2c-{service}"}))
    console = ConsoleSpanExporter(out=sys.stdout, formatter=_one_line)
    provider.add_span_processor(BatchSpanProcessor(console))
    trace.set_tracer_provider(provider)


def _one_line(span: ReadableSpan) -> str:
    return str(span.to_json(indent=None)) + "\n"


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
