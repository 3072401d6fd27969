"""One trace from the browser's generation through the agent to the tool worker."""

from __future__ import annotations

from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.suite import create_params, run_ws, running_suite


def recording_exporter() -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


async def test_spans_of_all_three_services_share_one_trace(tmp_path: Path) -> None:
    exporter = recording_exporter()
    async with running_suite(tmp_path) as suite:
        result = await run_ws(suite.ws_url, create_params())
    assert result.close_code == 1000
    spans = list(exporter.get_finished_spans())
    exporter.shutdown()

    def named(name: str) -> list[ReadableSpan]:
        return [s for s in spans if s.name == name]

    (root,) = named("generate-code")
    (rpc,) = named("GenerateCode")
    trace_id = root.context.trace_id
    assert rpc.parent is not None
    assert rpc.parent.span_id == root.context.span_id  # gateway → agent, via metadata
    variants = named("variant 0") + named("variant 1")
    assert len(variants) == 2
    assert all(v.parent is not None and v.parent.span_id == rpc.context.span_id for v in variants)
    agent_tools = named("tool create_file")
    worker_tools = named("ExecuteTool create_file")
    assert len(agent_tools) == len(worker_tools) == 2
    agent_ids = {s.context.span_id for s in agent_tools}
    # agent → tools, via metadata: each worker span is a child of an agent tool span.
    assert {s.parent.span_id for s in worker_tools if s.parent} == agent_ids
    assert {s.context.trace_id for s in [rpc, *variants, *agent_tools, *worker_tools]} == {trace_id}
