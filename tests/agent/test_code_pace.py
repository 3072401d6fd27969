"""CodePace: a loaded agent's code ticks stretch so its code messages stay near a budget."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace

import pytest

from services.agent.domain import Prompt
from services.agent.eventlog import CodePace, EventLog
from services.agent.events import CodeDelta
from services.agent.settings import AgentSettings
from tests.agent.cores import Manager as GenerationManager
from tests.agent.test_engine import InProcessTools, request
from tests.agent.test_eventlog import read_now
from tests.agent.test_generation_retention import GatedSessions


def paced(generations: int, messages_per_s: float = 1000) -> float:
    pace = CodePace(messages_per_s, base_s=0.01, max_s=0.04)
    for _ in range(generations):
        pace.started()
    return pace.tick_s


def test_the_tick_stays_at_its_base_until_the_budget_is_reached_then_stretches() -> None:
    assert [paced(n) for n in (0, 1, 10)] == [0.01, 0.01, 0.01]
    assert paced(25) == pytest.approx(0.025)
    assert paced(40) == pytest.approx(0.04)
    assert paced(400) == pytest.approx(0.04)  # never past max_s


def test_no_budget_keeps_the_base_tick_and_an_ended_generation_gives_its_share_back() -> None:
    assert paced(400, messages_per_s=0) == 0.01
    pace = CodePace(100, base_s=0.01, max_s=0.04)
    for _ in range(3):
        pace.started()
    assert pace.tick_s == pytest.approx(0.03)
    pace.ended()
    assert pace.generations == 2
    assert pace.tick_s == pytest.approx(0.02)


async def test_a_log_waits_for_the_tick_its_pace_has_now() -> None:
    pace = CodePace(0.001, base_s=0.0, max_s=3600)  # tick 0 now, 1000 s with a generation
    log = EventLog("g", tick_s=3600, pace=pace)
    log.publish(0, "c", CodeDelta(0, "<a>"))
    log.publish(0, "c", CodeDelta(3, "<b>"))  # a tick of 0 has passed: out at once
    pace.started()
    log.publish(0, "c", CodeDelta(6, "<c>"))  # now waits 1000 s
    assert [e.payload for e in await read_now(log)] == [CodeDelta(0, "<a>"), CodeDelta(3, "<b>")]
    log.tick()
    assert (await read_now(log, 2))[0].payload == CodeDelta(6, "<c>")


async def test_the_manager_counts_its_running_generations_in_the_pace() -> None:
    settings = replace(AgentSettings(demo_pace_s=0.0), code_messages_per_s=100)
    sessions = GatedSessions()
    manager = GenerationManager(settings, InProcessTools(), sessions)
    slow = Prompt(text="slow page")
    first = manager.start(request(generation_id="a", prompt=slow, variant_count=1))
    second = manager.start(request(generation_id="b", prompt=slow, variant_count=1))
    assert first.task is not None
    assert second.task is not None
    await sessions.slow_started.wait()
    assert manager.code_pace.tick_s == pytest.approx(0.02)  # 2 generations at 100 messages/s
    second.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await second.task
    assert (manager.code_pace.generations, manager.code_pace.tick_s) == (1, 0.01)
    sessions.gate.set()
    await first.task
    assert manager.code_pace.generations == 0
