"""The engine and the generation manager with a scripted model and in-memory tools."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any

import pytest

from services.agent import events as ev
from services.agent.convert import event_to_proto
from services.agent.domain import FileState, GenerationRequest, HistoryMessage, Prompt
from services.agent.engine import CostBudget, PreviewReplay, VariantEngine
from services.agent.generation import Generation
from services.agent.providers.base import (
    ProviderError,
    ProviderSession,
    ToolCall,
    ToolSpec,
)
from services.agent.providers.factory import SessionRequest
from services.agent.providers.scripted import (
    CallTool,
    Say,
    ScriptedSession,
    ScriptedTurn,
    Think,
    call_tool,
)
from services.agent.runner import ALL_FAILED
from services.agent.settings import AgentSettings
from services.agent.tooling import ToolContext, ToolOffer, ToolOutcome
from services.gateway.frames import FrameBuilder
from services.gateway.preview_policy import PreviewPolicyConfig
from services.tools.file_tools import file_tool_handlers
from services.tools.runtime import ToolRuntime
from services.tools.types import FileState as ToolFile
from services.tools.types import ToolCall as ToolsCall
from services.tools.types import ToolContext as ToolsContext
from services.tools.types import ToolFlags
from tests.agent.cores import Manager as GenerationManager

PAGE = "<!DOCTYPE html><html><body><h1>Hi \u00e9 \U0001f600</h1></body></html>"


class InProcessTools:
    """The real tool runtime, called directly instead of over gRPC."""

    def __init__(self) -> None:
        self.runtime = ToolRuntime(file_tool_handlers())
        self.calls: list[str] = []
        self.release: asyncio.Event | None = None
        self.entered = asyncio.Event()

    async def list_tools(self, context: ToolContext) -> ToolOffer:
        names = {"create_file", "edit_file", "retrieve_option"}
        return ToolOffer(
            tuple(
                ToolSpec(d.name, d.description, d.input_schema)
                for d in self.runtime.definitions(ToolFlags(), names)
            )
        )

    async def execute(
        self, call: ToolCall, file: FileState | None, context: ToolContext
    ) -> ToolOutcome:
        self.calls.append(call.name)
        self.entered.set()
        if self.release is not None:
            await self.release.wait()
        outcome = await self.runtime.execute(
            ToolsCall(call.id, call.name, call.arguments, call.invalid_json),
            ToolFile(file.path, file.content) if file else None,
            ToolsContext(option_codes=context.option_codes),
        )
        updated = outcome.updated_file
        return ToolOutcome(
            outcome.ok,
            outcome.result,
            outcome.summary,
            FileState(updated.path, updated.content) if updated else None,
        )


def scripted(turns: Sequence[ScriptedTurn]) -> Any:
    sessions: list[ScriptedSession] = []

    def factory(wanted: SessionRequest) -> ProviderSession:
        session = ScriptedSession(list(turns))
        sessions.append(session)
        return session

    factory.sessions = sessions  # type: ignore[attr-defined]
    return factory


CREATE_THEN_EDIT = [
    ScriptedTurn(
        (
            Think(("Plan", "ning")),
            Say(("Creating",)),
            call_tool("c1", "create_file", {"path": "index.html", "content": PAGE}, chunk_size=5),
        )
    ),
    ScriptedTurn(
        (call_tool("e1", "edit_file", {"old_text": "Hi", "new_text": "Hello"}, chunk_size=7),)
    ),
    ScriptedTurn((Say(("Done.",)),)),
]


async def events_of(generation: Generation, after: int = 0) -> AsyncIterator[ev.Event]:
    """The generation's events after `after`, one at a time, live until it ends."""
    async for batch in generation.batches(after):
        for event in batch:
            yield event


def request(**kw: Any) -> GenerationRequest:
    base = GenerationRequest(
        generation_id="", input_mode="text", prompt=Prompt(text="a page"), variant_count=2
    )
    return replace(base, **kw)


async def run(manager: GenerationManager, req: GenerationRequest) -> list[ev.Event]:
    generation = manager.start(req)
    return [e async for e in events_of(generation, 0)]


def settings() -> AgentSettings:
    return AgentSettings(demo_pace_s=0.0)


async def test_events_are_gapless_and_the_preview_rebuilds_the_file() -> None:
    tools = InProcessTools()
    manager = GenerationManager(settings(), tools, scripted(CREATE_THEN_EDIT))
    events = await run(manager, request())
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    assert isinstance(events[-1].payload, ev.GenerationComplete)
    assert events[-1].payload.status == "completed"
    for variant in (0, 1):
        mine = [
            e
            for e in events
            if e.variant_index == variant and not isinstance(e.payload, ev.GenerationComplete)
        ]
        code = ""
        for e in mine:
            if isinstance(e.payload, ev.CodeDelta):
                code = code[: e.payload.offset] + e.payload.text
        assert code == PAGE  # the streamed preview equals the tool's content
        starts = [(e.event_id, e.payload) for e in mine if isinstance(e.payload, ev.ToolStart)]
        assert [(event_id, p.name) for event_id, p in starts] == [
            ("c1", "create_file"),
            ("e1", "edit_file"),
        ]
        assert starts[0][1].input["path"] == "index.html"
        snapshots = [e.payload for e in mine if isinstance(e.payload, ev.CodeSnapshot)]
        assert snapshots[-1].content == PAGE.replace("Hi", "Hello")
        assert isinstance(mine[-1].payload, ev.VariantComplete)
        thinking_ids = {e.event_id for e in mine if isinstance(e.payload, ev.ThinkingDelta)}
        assert len(thinking_ids) == 1
        assert next(iter(thinking_ids)).startswith(f"thinking-{variant}-")
    record = manager.get(events[0].generation_id)
    assert record is not None
    assert [v.status for v in record.variants] == ["completed"] * 2
    assert [t.name for t in record.variants[0].tool_calls] == ["create_file", "edit_file"]


async def test_finalizes_from_html_in_the_last_assistant_text() -> None:
    turns = [ScriptedTurn((Say(("Here:\n```html\n", PAGE, "\n```")),))]
    manager = GenerationManager(settings(), InProcessTools(), scripted(turns))
    events = await run(manager, request(variant_count=1))
    snapshots = [e.payload for e in events if isinstance(e.payload, ev.CodeSnapshot)]
    assert [s.content for s in snapshots] == [PAGE]


async def test_update_starts_from_the_file_state() -> None:
    turns = [
        ScriptedTurn((call_tool("e", "edit_file", {"old_text": "Hi", "new_text": "Yo"}),)),
        ScriptedTurn((Say(("ok",)),)),
    ]
    manager = GenerationManager(settings(), InProcessTools(), scripted(turns))
    events = await run(
        manager,
        request(
            generation_type="update", file_state=FileState("index.html", PAGE), variant_count=1
        ),
    )
    snapshots = [e.payload for e in events if isinstance(e.payload, ev.CodeSnapshot)]
    assert snapshots[-1].content == PAGE.replace("Hi", "Yo")


async def test_a_failing_variant_does_not_stop_the_others() -> None:
    class Flaky(ScriptedSession):
        async def stream_turn(self, on_event: Any) -> Any:
            raise ProviderError("OpenAI rate limit or quota exceeded (429).")

    calls = {"n": 0}

    def factory(wanted: SessionRequest) -> ProviderSession:
        calls["n"] += 1
        return Flaky([]) if calls["n"] == 1 else ScriptedSession(list(CREATE_THEN_EDIT))

    manager = GenerationManager(settings(), InProcessTools(), factory)
    events = await run(manager, request())
    errors = [
        (e.variant_index, e.payload) for e in events if isinstance(e.payload, ev.VariantError)
    ]
    assert [(index, p.message) for index, p in errors] == [
        (0, "OpenAI rate limit or quota exceeded (429).")
    ]
    assert any(isinstance(e.payload, ev.VariantComplete) and e.variant_index == 1 for e in events)
    assert events[-1].payload == ev.GenerationComplete("completed")


async def test_all_variants_failing_fails_the_generation() -> None:
    turns = [ScriptedTurn((call_tool("x", "create_file", {"path": "a"}),))] * 40
    manager = GenerationManager(settings(), InProcessTools(), scripted(turns))
    events = await run(manager, request())
    failures = [e.payload for e in events if isinstance(e.payload, ev.VariantError)]
    assert [f.message for f in failures] == ["Agent exceeded max tool turns (30)."] * 2
    assert events[-2].payload == ev.GenerationError(ALL_FAILED)
    assert events[-1].payload == ev.GenerationComplete("failed")


async def test_invalid_json_arguments_reach_the_tool_as_an_error_result() -> None:
    turns = [
        ScriptedTurn((CallTool("bad", "create_file", ('{"content": ',)),)),
        ScriptedTurn((Say(("sorry",)),)),
    ]
    factory = scripted(turns)
    manager = GenerationManager(settings(), InProcessTools(), factory)
    events = await run(manager, request(variant_count=1))
    finished = [e.payload for e in events if isinstance(e.payload, ev.ToolResult)]
    assert finished == [
        ev.ToolResult("create_file", {"error": "Invalid JSON tool arguments"}, False)
    ]
    appended = factory.sessions[0].tool_results[0][0]
    assert appended.result["INVALID_JSON"] == '{"content": '


async def test_budget_stops_before_the_next_tool_call() -> None:
    class Costly(ScriptedSession):
        def total_cost_usd(self) -> float:
            return 0.5

    manager = GenerationManager(
        replace(settings(), max_cost_usd=0.1),
        InProcessTools(),
        lambda wanted: Costly(list(CREATE_THEN_EDIT)),
    )
    events = await run(manager, request(variant_count=1))
    failure = next(e.payload for e in events if isinstance(e.payload, ev.VariantError))
    assert "GENERATION_MAX_COST_USD" in failure.message
    assert not any(isinstance(e.payload, ev.ToolStart) and e.event_id == "e1" for e in events)


async def test_cancel_stops_a_running_tool_call_and_closes_sessions() -> None:
    tools = InProcessTools()
    tools.release = asyncio.Event()  # the tool call blocks until cancelled
    factory = scripted(CREATE_THEN_EDIT)
    manager = GenerationManager(settings(), tools, factory)
    generation = manager.start(request())
    await tools.entered.wait()
    assert generation.cancel()
    events = [e async for e in events_of(generation, 0)]
    assert events[-1].payload == ev.GenerationComplete("cancelled")
    assert generation.status == "cancelled"
    assert all(s.closed for s in factory.sessions)
    assert {v.status for v in generation.variants} == {"cancelled"}


async def test_watch_resumes_after_a_sequence_without_loss() -> None:
    manager = GenerationManager(settings(), InProcessTools(), scripted(CREATE_THEN_EDIT))
    generation: Generation = manager.start(request())
    everything = [e async for e in events_of(generation, 0)]
    tail = [e async for e in events_of(generation, 7)]
    assert tail == everything[7:]


async def test_scripted_arguments_round_trip() -> None:
    step = call_tool("id", "create_file", {"content": PAGE}, chunk_size=3)
    assert json.loads("".join(step.argument_chunks)) == {"content": PAGE}


@pytest.mark.parametrize("duplicate", ["same"])
async def test_duplicate_generation_id_is_refused(duplicate: str) -> None:
    manager = GenerationManager(settings(), InProcessTools(), scripted(CREATE_THEN_EDIT))
    manager.start(request(generation_id=duplicate))
    with pytest.raises(ValueError, match="already in use"):
        manager.start(request(generation_id=duplicate))
    await manager.shutdown(0.0)


async def test_a_lone_surrogate_in_streamed_content_is_replaced_not_fatal() -> None:
    raw = '{"path": "index.html", "content": "<p>a\\ud800b</p>"}'
    turns = [
        ScriptedTurn((CallTool("s", "create_file", (raw[:30], raw[30:])),)),
        ScriptedTurn((Say(("ok",)),)),
    ]
    manager = GenerationManager(settings(), InProcessTools(), scripted(turns))
    events = await run(manager, request(variant_count=1))
    deltas = "".join(e.payload.text for e in events if isinstance(e.payload, ev.CodeDelta))
    assert deltas == "<p>a\ufffdb</p>"
    snapshots = [e.payload for e in events if isinstance(e.payload, ev.CodeSnapshot)]
    assert snapshots[-1].content == "<p>a\ufffdb</p>"
    assert events[-1].payload == ev.GenerationComplete("completed")


async def test_a_paused_stream_still_flushes_the_preview() -> None:
    resume = asyncio.Event()
    head = '{"path": "index.html", "content": "' + "x" * 50
    tail = "y" * 2000 + '"}'

    class Pausing(ScriptedSession):
        async def stream_turn(self, on_event: Any) -> Any:
            if self._turn == 0:
                # The model stalls mid-content: the batched preview must not wait for it.
                from services.agent.providers.base import ToolCallDelta

                await on_event(ToolCallDelta("p", "create_file", head[:40]))
                await on_event(ToolCallDelta("p", "create_file", head[40:]))
                await resume.wait()
            return await super().stream_turn(on_event)

    turns = [
        ScriptedTurn((CallTool("p", "create_file", (tail,)),)),
        ScriptedTurn((Say(("ok",)),)),
    ]
    # The tail arrives in one piece; its replay is tested apart and would only add pauses.
    manager = GenerationManager(
        replace(settings(), preview_replay_s=0.0),
        InProcessTools(),
        lambda wanted: Pausing(list(turns)),
    )
    generation = manager.start(request(variant_count=1))
    code = ""
    async for event in events_of(generation, 0):
        if isinstance(event.payload, ev.CodeDelta):
            code = code[: event.payload.offset] + event.payload.text
            if code == "x" * 50 and not resume.is_set():
                resume.set()  # everything streamed so far reached the log while paused
    assert resume.is_set()
    assert code == "x" * 50 + "y" * 2000


async def test_tool_calls_beyond_the_per_turn_limit_are_dropped_and_the_model_told_once() -> None:
    calls = tuple(call_tool(f"r{i}", "retrieve_option", {"option_number": 1}) for i in range(5))
    turns = [ScriptedTurn(calls), ScriptedTurn((Say(("ok",)),))]
    tools = InProcessTools()
    factory = scripted(turns)
    manager = GenerationManager(replace(settings(), max_tool_calls_per_turn=2), tools, factory)
    events = await run(manager, request(variant_count=1, option_codes=("<p>a</p>",)))
    assert tools.calls == ["retrieve_option", "retrieve_option"]
    # Only the calls run go back into the conversation; the last result says the rest.
    appended = factory.sessions[0].tool_results[0]
    assert [(r.call.id, r.ok) for r in appended] == [("r0", True), ("r1", True)]
    assert "dropped_calls" not in appended[0].result
    assert appended[-1].result["dropped_calls"] == (
        "3 more tool calls of this turn were dropped, not run: at most 2 run per turn. "
        "Ask again for what still needs doing."
    )
    # The browser sees only the calls that ran.
    started = [e.event_id for e in events if isinstance(e.payload, ev.ToolStart)]
    assert started == ["r0", "r1"]


async def test_a_model_that_keeps_flooding_tool_calls_is_stopped_naming_the_bound() -> None:
    calls = tuple(call_tool(f"r{i}", "retrieve_option", {"option_number": 1}) for i in range(3))
    tools = InProcessTools()
    manager = GenerationManager(
        replace(settings(), max_tool_calls_per_turn=2),
        tools,
        lambda wanted: ScriptedSession(lambda turn, results: ScriptedTurn(calls)),
    )
    events = await run(manager, request(variant_count=1, option_codes=("<p>a</p>",)))
    [failure] = [e.payload for e in events if isinstance(e.payload, ev.VariantError)]
    assert failure.message == (
        "Stopped: the model asked for more than 2 tool calls in one turn 3 times; at most 2 "
        "run per turn (S2C_MAX_TOOL_CALLS_PER_TURN)."
    )
    assert len(tools.calls) == 2 * 2  # two turns ran their first two calls; the third none


async def test_a_generation_past_its_deadline_is_stopped_with_a_clear_error() -> None:
    tools = InProcessTools()
    tools.release = asyncio.Event()  # the first tool call never finishes
    manager = GenerationManager(settings(), tools, scripted(CREATE_THEN_EDIT))
    generation = manager.start(request(), deadline_s=0.0)
    events = [e async for e in events_of(generation, 0)]
    failures = [e.payload for e in events if isinstance(e.payload, ev.VariantError)]
    assert len(failures) == 2
    assert failures[0].message == "The generation took longer than 0 s and was stopped."
    assert events[-2].payload == ev.GenerationError(failures[0].message)
    assert events[-1].payload == ev.GenerationComplete("failed")


class Pauses:
    """An injected replay sleep that only counts."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)


def engine_for(
    turns: Sequence[ScriptedTurn],
    emitted: list[tuple[str, ev.Payload]],
    *,
    file: FileState | None = None,
    replay: PreviewReplay | None = None,
) -> VariantEngine:
    return VariantEngine(
        index=0,
        session=ScriptedSession(list(turns)),
        tools=InProcessTools(),
        context=ToolContext(),
        emit=lambda event_id, payload: emitted.append((event_id, payload)),
        budget=CostBudget(None),
        file=file,
        preview_replay=replay or PreviewReplay(),
    )


async def test_streamed_content_is_forwarded_as_it_comes_without_pauses() -> None:
    page = "<html><body>" + "<p>streamed</p>" * 100 + "</body></html>"
    args = {"path": "index.html", "content": page}
    turns = [
        ScriptedTurn((call_tool("c1", "create_file", args, chunk_size=64),)),
        ScriptedTurn((Say(("ok",)),)),
    ]
    emitted: list[tuple[str, ev.Payload]] = []
    pauses = Pauses()
    await engine_for(turns, emitted, replay=PreviewReplay(1.0, pauses)).run()
    deltas = [p for _, p in emitted if isinstance(p, ev.CodeDelta)]
    assert "".join(d.text for d in deltas) == page
    assert max(len(d.text) for d in deltas) <= 64
    assert pauses.seconds == []  # a streaming provider's tool call is never held back


async def test_an_opening_content_string_emits_no_empty_code_delta() -> None:
    new_page = "<html><body><p>new page</p></body></html>"
    # Split right after the opening quote: the scanner's first fragment is empty.
    chunks = ('{"path": "index.html", "content": "', new_page[:12], new_page[12:] + '"}')
    turns = [
        ScriptedTurn((CallTool("c1", "create_file", chunks),)),
        ScriptedTurn((Say(("ok",)),)),
    ]
    emitted: list[tuple[str, ev.Payload]] = []
    await engine_for(turns, emitted, file=FileState("index.html", PAGE)).run()
    payloads = [p for event_id, p in emitted if event_id == "c1"]
    assert [type(p).__name__ for p in payloads] == [
        "ToolStart",
        "CodeDelta",
        "CodeDelta",
        "CodeSnapshot",
        "ToolResult",
    ]
    assert payloads[1:3] == [ev.CodeDelta(0, new_page[:12]), ev.CodeDelta(12, new_page[12:])]


async def test_an_update_never_sends_an_empty_set_code_to_the_browser() -> None:
    """Engine → event log → proto → FrameBuilder: the setCode frames the upstream UI reads."""
    new_page = "<html><body><p>new page</p></body></html>"
    chunks = ('{"path": "index.html", "content": "', new_page[:12], new_page[12:] + '"}')
    turns = [
        ScriptedTurn((CallTool("c1", "create_file", chunks),)),
        ScriptedTurn((Say(("ok",)),)),
    ]
    history = (
        HistoryMessage("user", "a page"),
        HistoryMessage("assistant", PAGE),
        HistoryMessage("user", "make it new"),
    )
    update = request(
        variant_count=1,
        generation_type="update",
        history=history,
        file_state=FileState("index.html", PAGE),
    )
    manager = GenerationManager(settings(), InProcessTools(), scripted(turns))
    frames = FrameBuilder(PreviewPolicyConfig(), lambda: 100.0)
    out: list[dict[str, Any]] = []
    async for e in events_of(manager.start(update), 0):
        out += frames.on_event(event_to_proto(e))
    out += frames.flush_all()
    set_codes = [f["value"] for f in out if f["type"] == "setCode"]
    # The first text at once (a new file), the tool's file, the final code; never "".
    assert set_codes == [new_page[:12], new_page, new_page]
