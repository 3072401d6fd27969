"""Retention of finished generations: bounded by count, bytes and age, never held back by a
running one; a retired generation replays from its run record."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from services.agent import events as ev
from services.agent.archive import replay
from services.agent.domain import FileState, VariantRecord
from services.agent.providers.base import ProviderSession
from services.agent.providers.factory import SessionRequest
from services.agent.providers.scripted import ScriptedSession
from services.agent.retention import Retention, RetentionLimits
from services.agent.runstore import RunRecord
from services.agent.settings import AgentSettings
from tests.agent.cores import Manager as GenerationManager
from tests.agent.test_engine import CREATE_THEN_EDIT, InProcessTools, request, run


class GatedSessions:
    """Scripted sessions; those of a prompt starting with "slow" wait for `gate`."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.slow_started = asyncio.Event()

    def __call__(self, wanted: SessionRequest) -> ProviderSession:
        session = ScriptedSession(list(CREATE_THEN_EDIT))
        if not wanted.request.prompt.text.startswith("slow"):
            return session
        inner = session.stream_turn

        async def gated(on_event: Any) -> Any:
            self.slow_started.set()
            await self.gate.wait()
            return await inner(on_event)

        session.stream_turn = gated  # type: ignore[method-assign]
        return session


def manager(sessions: Any = None, **limits: Any) -> GenerationManager:
    settings = replace(AgentSettings(demo_pace_s=0.0), **limits)
    return GenerationManager(settings, InProcessTools(), sessions or GatedSessions())


def held_ids(m: GenerationManager) -> list[str]:
    return [g.id for g in m.generations()]


async def test_retained_count_stays_bounded_past_the_cap() -> None:
    m = manager(retained_generations=3, retained_bytes=0, retained_seconds=0)
    ids = [f"g{i}" for i in range(8)]
    for generation_id in ids:
        await run(m, request(generation_id=generation_id))
    assert held_ids(m) == ids[-3:]
    assert m.metrics.retained_generations._value.get() == 3


async def test_retained_bytes_stay_bounded() -> None:
    probe = manager(retained_generations=0, retained_bytes=0, retained_seconds=0)
    await run(probe, request(generation_id="probe"))
    one = probe.metrics.retained_bytes._value.get()
    assert one > 2 * len(CREATE_THEN_EDIT)  # the log, the request and the code count

    m = manager(retained_generations=0, retained_bytes=int(one * 2.5), retained_seconds=0)
    for i in range(10):
        await run(m, request(generation_id=f"g{i}"))
        assert m.metrics.retained_bytes._value.get() <= one * 2.5
    assert held_ids(m) == ["g8", "g9"]


async def test_a_running_generation_does_not_hold_back_retirement() -> None:
    sessions = GatedSessions()
    m = manager(sessions, retained_generations=2, retained_bytes=0, retained_seconds=0)
    slow = m.start(request(generation_id="slow", prompt=replace(request().prompt, text="slow")))
    await sessions.slow_started.wait()
    for i in range(6):
        await run(m, request(generation_id=f"g{i}"))
    # The running one stays; of the finished ones only the newest two are kept.
    assert held_ids(m) == ["slow", "g4", "g5"]

    sessions.gate.set()
    assert slow.task is not None
    await slow.task
    assert sorted(held_ids(m)) == ["g5", "slow"]  # g4 went: it finished before slow


async def test_finished_generations_expire_even_when_the_agent_is_idle() -> None:
    retired: list[str] = []
    gone = asyncio.Event()

    def retire(generation_id: str) -> None:
        retired.append(generation_id)
        gone.set()

    retention = Retention(RetentionLimits(max_count=0, max_bytes=0, max_age_s=0.01), retire)
    retention.finished("a", 10)
    await asyncio.wait_for(gone.wait(), 10)  # the timer fires with nothing else happening
    assert retired == ["a"]
    assert (retention.count, retention.bytes) == (0, 0)


def test_a_retired_record_replays_its_end() -> None:
    record = RunRecord(
        "g1",
        "cancelled",
        1.0,
        2.0,
        variants=(
            VariantRecord(0, "demo", "completed", code="<p>0</p>"),
            VariantRecord(1, "demo", "cancelled", code="<p>1"),
        ),
    )
    events = replay(record, 40)
    assert [e.sequence for e in events] == list(range(41, 41 + len(events)))
    assert [type(e.payload) for e in events] == [
        ev.VariantCount,
        ev.CodeSnapshot,
        ev.VariantComplete,
        ev.CodeSnapshot,
        ev.GenerationComplete,
    ]
    assert events[-1].payload == ev.GenerationComplete("cancelled")

    failed = replay(replace(record, status="failed", error="boom"), 0)
    assert failed[-2].payload == ev.GenerationError("boom")


def test_a_retired_site_replays_every_file_its_entry_page_first() -> None:
    # A site without an index.html: its entry page is the first page it wrote.
    files = (FileState("about.html", "<p>about</p>"), FileState("faq.html", "<p>faq</p>"))
    variant = VariantRecord(0, "demo", "completed", code="<p>about</p>", files=files)
    events = replay(RunRecord("g1", "completed", 1.0, 2.0, variants=(variant,)), 0)
    snapshots = [e.payload for e in events if isinstance(e.payload, ev.CodeSnapshot)]
    assert snapshots == [
        ev.CodeSnapshot("about.html", "<p>about</p>"),
        ev.CodeSnapshot("faq.html", "<p>faq</p>"),
    ]
