"""An OTLP trace receiver, as a collector (Jaeger, the OpenTelemetry Collector) runs one:
the real `opentelemetry.proto.collector.trace.v1.TraceService` over gRPC on port 0. It
keeps every span it is sent, with the `service.name` of the process that sent it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as pb
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc as pb_grpc


@dataclass(frozen=True, slots=True)
class ReceivedSpan:
    service: str
    name: str
    trace_id: str  # hex, as the console exporter prints it (without 0x)
    span_id: str
    parent_id: str  # "" for a root span


@dataclass
class Collector(pb_grpc.TraceServiceServicer):
    spans: list[ReceivedSpan] = field(default_factory=list)
    received: asyncio.Event = field(default_factory=asyncio.Event)
    port: int = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def Export(
        self, request: pb.ExportTraceServiceRequest, context: object
    ) -> pb.ExportTraceServiceResponse:
        for resource_spans in request.resource_spans:
            attributes = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            service = attributes.get("service.name", "")
            for scope in resource_spans.scope_spans:
                self.spans.extend(
                    ReceivedSpan(
                        service,
                        span.name,
                        span.trace_id.hex(),
                        span.span_id.hex(),
                        span.parent_span_id.hex(),
                    )
                    for span in scope.spans
                )
        self.received.set()
        return pb.ExportTraceServiceResponse()

    def of(self, service: str) -> list[ReceivedSpan]:
        return [s for s in self.spans if s.service == service]


@asynccontextmanager
async def running_collector() -> AsyncIterator[Collector]:
    collector = Collector()
    server = grpc.aio.server()
    pb_grpc.add_TraceServiceServicer_to_server(collector, server)  # type: ignore[no-untyped-call]
    collector.port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield collector
    finally:
        await server.stop(None)
