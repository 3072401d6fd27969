"""One trace from the browser's generation through the agent to the tool worker, across
three real processes: each service's startup sets tracing up, and only the gRPC metadata
carries the context from one process to the next. The spans go both to an OTLP receiver
running in the test (the SDK's own exporter, set up by the standard variables alone) and
to each process's stdout (the console exporter): one run checks both."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

from tests.fakes.otlp_collector import Collector, running_collector
from tests.processes import Service, running_processes
from tests.suite import create_params, run_ws


async def spans_of(service: Service) -> list[dict[str, Any]]:
    """The spans a stopped service printed: stdout holds nothing but one span per line."""
    assert await service.stop(signal.SIGTERM) == 0, "".join(service.log[-20:])
    spans = [json.loads(line) for line in await service.output()]
    names = {s["resource"]["attributes"]["service.name"] for s in spans}
    assert names == {f"s2c-{service.name}"}
    return spans


async def test_spans_of_three_processes_share_one_trace(tmp_path: Path) -> None:
    async with running_collector() as collector:
        env = {"OTEL_TRACES_EXPORTER": "otlp,console", "OTEL_EXPORTER_OTLP_ENDPOINT": ""}
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.endpoint
        async with running_processes(tmp_path, env) as suite:
            result = await run_ws(suite.ws_url, create_params())
            assert result.close_code == 1000
            # The gateway first, so no stream is cut while its span is still open.
            gateway, agent, tools = [
                await spans_of(s) for s in (suite.gateway, suite.agent, suite.tools)
            ]
            # Spans only on stdout: none among the log lines on stderr.
            for service in (suite.gateway, suite.agent, suite.tools):
                assert not [line for line in service.log if '"span_id"' in line]
        # Each process flushed its spans to the receiver as it exited.
        assert_received(collector, [*gateway, *agent, *tools])

    def named(spans: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
        return [s for s in spans if s["name"] == name]

    def span_id(span: dict[str, Any]) -> str:
        return str(span["context"]["span_id"])

    (root,) = named(gateway, "generate-code")
    assert root["parent_id"] is None
    trace_id = root["context"]["trace_id"]
    (rpc,) = named(agent, "GenerateCode")
    assert rpc["parent_id"] == span_id(root)  # gateway → agent, via gRPC metadata
    variants = named(agent, "variant 0") + named(agent, "variant 1")
    assert len(variants) == 2
    assert {v["parent_id"] for v in variants} == {span_id(rpc)}
    agent_tools = named(agent, "tool create_file")
    worker_tools = named(tools, "ExecuteTool create_file")
    assert len(agent_tools) == len(worker_tools) == 2
    assert {s["parent_id"] for s in agent_tools} == {span_id(v) for v in variants}
    # agent → tools, via gRPC metadata: each worker span is a child of an agent tool span.
    assert {s["parent_id"] for s in worker_tools} == {span_id(s) for s in agent_tools}
    assert {s["context"]["trace_id"] for s in [*gateway, *agent, *tools]} == {trace_id}


def assert_received(collector: Collector, printed: list[dict[str, Any]]) -> None:
    """The receiver got what the processes printed: the same spans, from all three
    services, in one trace."""
    services = {s.service for s in collector.spans}
    assert services == {"s2c-gateway", "s2c-agent", "s2c-tools"}
    assert len({s.trace_id for s in collector.spans}) == 1

    def key(
        service: str, name: str, trace_id: str, span_id: str, parent: str | None
    ) -> tuple[str, ...]:
        return (
            service,
            name,
            trace_id.removeprefix("0x"),
            span_id.removeprefix("0x"),
            (parent or "").removeprefix("0x"),
        )

    received = sorted(
        key(s.service, s.name, s.trace_id, s.span_id, s.parent_id) for s in collector.spans
    )
    expected = sorted(
        key(
            p["resource"]["attributes"]["service.name"],
            p["name"],
            p["context"]["trace_id"],
            p["context"]["span_id"],
            p["parent_id"],
        )
        for p in printed
    )
    assert received == expected
