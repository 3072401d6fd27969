"""Where spans go: the standard OTEL_* variables decide, read once at startup."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as pb

from services.common.tracing import exporter_names, tracer_provider
from tests.fakes.otlp_collector import running_collector


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({}, []),
        # An endpoint alone is enough: nobody sets one to send nothing.
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"}, ["otlp"]),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, ["otlp"]),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"}, []),
        ({"OTEL_TRACES_EXPORTER": "otlp, Console"}, ["otlp", "console"]),
        ({"S2C_OTEL_EXPORTER": "console"}, ["console"]),
        ({"S2C_OTEL_EXPORTER": "console", "OTEL_TRACES_EXPORTER": "otlp"}, ["otlp", "console"]),
    ],
)
def test_the_standard_variables_pick_the_exporters(env: dict[str, str], names: list[str]) -> None:
    assert exporter_names(env) == names


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER: unknown exporter 'zipkin'"),
        ({"S2C_OTEL_EXPORTER": "otlp"}, "S2C_OTEL_EXPORTER must be 'console'"),
        (
            {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
            "OTEL_EXPORTER_OTLP_PROTOCOL must be one of grpc, http/protobuf, got 'http/json'",
        ),
    ],
)
def test_a_value_not_understood_is_refused_naming_the_variable(
    env: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        tracer_provider("agent", env)


async def test_otlp_over_grpc_reaches_a_collector_under_the_service_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with running_collector() as collector:
        # The SDK's exporter reads its endpoint itself, from the process environment.
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint, "OTEL_SERVICE_NAME": "edge-7"}
        provider = tracer_provider("gateway", env)
        assert provider is not None
        provider.get_tracer("t").start_span("hello").end()
        assert await asyncio.to_thread(provider.force_flush)
        provider.shutdown()
    [span] = collector.spans
    assert (span.service, span.name, span.parent_id) == ("edge-7", "hello", "")


async def test_otlp_over_http_reaches_a_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    received: list[pb.ExportTraceServiceRequest] = []

    async def traces(request: web.Request) -> web.Response:
        received.append(pb.ExportTraceServiceRequest.FromString(await request.read()))
        return web.Response(
            body=pb.ExportTraceServiceResponse().SerializeToString(),
            content_type="application/x-protobuf",
        )

    app = web.Application()
    app.router.add_post("/v1/traces", traces)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        endpoint = f"http://127.0.0.1:{runner.addresses[0][1]}"
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        }
        provider = tracer_provider("tools", env)
        assert provider is not None
        provider.get_tracer("t").start_span("over http").end()
        assert await asyncio.to_thread(provider.force_flush)
        provider.shutdown()
    finally:
        await runner.cleanup()
    [request] = received
    [resource_spans] = request.resource_spans
    service = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
    assert service["service.name"] == "s2c-tools"
    assert [s.name for s in resource_spans.scope_spans[0].spans] == ["over http"]
