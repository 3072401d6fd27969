"""OpenTelemetry traces across gateway → agent → tools, carried in gRPC metadata.

Propagation (W3C `traceparent`) is always on: a process that records nothing still passes
the caller's trace context on to the next hop. Every service process calls `setup_tracing`
once at startup (`services/cli.py`), so one browser generation is one trace across the
three processes. What is recorded goes where the standard variables say:

* `OTEL_TRACES_EXPORTER`: a comma list of `otlp`, `console`, `none`. Unset: `otlp` when an
  OTLP endpoint is set (`OTEL_EXPORTER_OTLP_ENDPOINT` or `..._TRACES_ENDPOINT`), else
  nothing — a process never sends to a collector nobody configured.
* `otlp` is the SDK's own exporter, which reads its `OTEL_EXPORTER_OTLP_*` variables
  (endpoint, headers, certificates, timeout, compression) from the process environment;
  `OTEL_EXPORTER_OTLP_PROTOCOL` (or `..._TRACES_PROTOCOL`) is `grpc` (the default) or
  `http/protobuf`.
* `console` prints each finished span as one JSON line on stdout (the logs go to stderr);
  `S2C_OTEL_EXPORTER=console` is its older spelling.
* `OTEL_SERVICE_NAME` names the process in every span (default `s2c-<service>`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

Metadata = list[tuple[str, str]]

EXPORTERS = ("otlp", "console", "none")
PROTOCOLS = ("grpc", "http/protobuf")
LEGACY_EXPORTERS = ("", "none", "console")  # S2C_OTEL_EXPORTER
_ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def setup_tracing(service: str, env: Mapping[str, str] | None = None) -> None:
    """Installs a recording tracer provider when the environment asks for an exporter.
    The batch processors flush on their own schedule and when the process exits."""
    provider = tracer_provider(service, os.environ if env is None else env)
    if provider is not None:
        trace.set_tracer_provider(provider)


def tracer_provider(service: str, env: Mapping[str, str]) -> TracerProvider | None:
    """The provider the environment asks for (None: record nothing); ValueError naming
    the variable when a value is not understood."""
    exporters = [_exporter(name, env) for name in exporter_names(env)]
    if not exporters:
        return None
    name = env.get("OTEL_SERVICE_NAME", "").strip() or f"s2c-{service}"
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def exporter_names(env: Mapping[str, str]) -> list[str]:
    """The exporters to run, from OTEL_TRACES_EXPORTER (and S2C_OTEL_EXPORTER)."""
    legacy = env.get("S2C_OTEL_EXPORTER", "").strip().lower()
    if legacy not in LEGACY_EXPORTERS:
        raise ValueError(f"S2C_OTEL_EXPORTER must be 'console', 'none' or unset, got {legacy!r}")
    raw = env.get("OTEL_TRACES_EXPORTER", "")
    names = [n.strip().lower() for n in raw.split(",") if n.strip()]
    for unknown in (n for n in names if n not in EXPORTERS):
        raise ValueError(
            f"OTEL_TRACES_EXPORTER: unknown exporter {unknown[:40]!r}; use otlp, console or none"
        )
    if not names and any(env.get(var, "").strip() for var in _ENDPOINTS):
        names = ["otlp"]
    if legacy == "console":
        names.append("console")
    return [n for n in dict.fromkeys(names) if n != "none"]


def _exporter(name: str, env: Mapping[str, str]) -> SpanExporter:
    if name == "console":
        return ConsoleSpanExporter(out=sys.stdout, formatter=_one_line)
    variable = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
    protocol = env.get(variable, "").strip()
    if not protocol:
        variable = "OTEL_EXPORTER_OTLP_PROTOCOL"
        protocol = env.get(variable, "").strip() or "grpc"
    # Imported only when asked for: most processes export nothing.
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    if protocol == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter as HttpExporter,
        )

        return HttpExporter()
    raise ValueError(f"{variable} must be one of {', '.join(PROTOCOLS)}, got {protocol[:40]!r}")


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
