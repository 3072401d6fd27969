"""A Gemini create_file, whose content arrives whole, still previews live (engine replay)."""

from __future__ import annotations

import asyncio
import itertools

from google import genai

from services.agent.domain import FileState
from services.agent.engine import CostBudget, PreviewReplay, VariantEngine
from services.agent.events import CodeDelta, Payload, ToolStart
from services.agent.providers.base import ToolCall
from services.agent.providers.gemini import GeminiSession
from services.agent.tooling import ToolContext, ToolOffer, ToolOutcome
from tests.fakes.gemini_server import Call, FakeGemini, Say
from tests.providers import sessions
from tests.providers.test_gemini import TOOLS, make_config

fake = sessions.gemini_fake
client = sessions.gemini_client


class VirtualClock:
    """The replay's injected sleep: records each pause and advances a virtual clock."""

    def __init__(self) -> None:
        self.now = 0.0
        self.pauses: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)  # still yields, as a real pause does


class CreateFileTools:
    """create_file only; remembers how many code deltas had been emitted when it ran."""

    def __init__(self, emitted: list[tuple[str, Payload]]) -> None:
        self.emitted = emitted
        self.deltas_before_run: int | None = None

    async def list_tools(self, context: ToolContext) -> ToolOffer:
        return ToolOffer(tuple(TOOLS[:1]))

    async def execute(
        self, call: ToolCall, file: FileState | None, context: ToolContext
    ) -> ToolOutcome:
        self.deltas_before_run = sum(isinstance(p, CodeDelta) for _, p in self.emitted)
        content = call.arguments["content"]
        return ToolOutcome(
            True,
            {"content": "Created index.html"},
            {"path": "index.html", "contentLength": len(content)},
            FileState("index.html", content),
        )


def one_variant(
    fake: FakeGemini, client: genai.Client, page: str, tools: CreateFileTools, replay: PreviewReplay
) -> VariantEngine:
    """One variant on the Gemini session, whose model creates `page` in one call-1 and
    then is done; the variant emits into `tools.emitted`."""
    fake.add_turn(Call("create_file", {"path": "index.html", "content": page}, id="call-1"))
    fake.add_turn(Say("Done."))
    return VariantEngine(
        index=0,
        session=GeminiSession(make_config(fake.base_url), client=client),
        tools=tools,
        context=ToolContext(),
        emit=lambda event_id, payload: tools.emitted.append((event_id, payload)),
        budget=CostBudget(None),
        preview_replay=replay,
    )


async def test_a_whole_create_file_is_replayed_as_a_paced_preview(
    fake: FakeGemini, client: genai.Client
) -> None:
    page = "<!DOCTYPE html><html><body>" + "<p>row \u00e9</p>" * 480 + "</body></html>"
    emitted: list[tuple[str, Payload]] = []
    tools = CreateFileTools(emitted)
    clock = VirtualClock()
    engine = one_variant(fake, client, page, tools, PreviewReplay(1.0, clock.sleep))

    assert await engine.run() == page

    call_events = [p for event_id, p in emitted if event_id == "call-1"]
    kinds = [type(p).__name__ for p in call_events]
    deltas = [p for p in call_events if isinstance(p, CodeDelta)]
    # ToolStart, the replayed steps (upstream's: ≥ 200 characters, ≤ 18 of them), then
    # the tool ran and its snapshot and result follow.
    assert kinds == ["ToolStart"] + ["CodeDelta"] * 18 + ["CodeSnapshot", "ToolResult"]
    assert tools.deltas_before_run == 18
    assert deltas[0].offset == 0
    for before, after in itertools.pairwise(deltas):  # increasing, each where the last ended
        assert after.offset == before.offset + len(before.text)
    assert "".join(d.text for d in deltas) == page
    start = call_events[0]
    assert isinstance(start, ToolStart)
    assert (start.input["path"], start.input["contentLength"]) == ("index.html", len(page))
    # One pause between steps, all of them within the bound.
    assert len(clock.pauses) == 17
    assert clock.now <= 1.0


async def test_a_whole_create_file_is_one_delta_with_the_replay_off(
    fake: FakeGemini, client: genai.Client
) -> None:
    page = "<html><body>" + "x" * 3000 + "</body></html>"
    emitted: list[tuple[str, Payload]] = []
    engine = one_variant(fake, client, page, CreateFileTools(emitted), PreviewReplay(0.0))
    await engine.run()
    assert [p for _, p in emitted if isinstance(p, CodeDelta)] == [CodeDelta(0, page)]
