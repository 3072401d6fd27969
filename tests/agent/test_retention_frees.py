"""A retired generation is freed by reference counting alone.

Every retired generation used to stay in memory until the next full cycle collection (about
one per 150 demo generations), so the agent's RSS rose and fell by tens of MB: the stream
ending after `generation_complete` cancelled the task during its final save, and a cancelled
task keeps its CancelledError, whose traceback holds the frame holding the generation, which
held the task. These tests run with the cycle collector off, so only a broken cycle passes.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator
from dataclasses import replace

import pytest

from services.agent.generation import Generation
from services.agent.runstore import RunRecord
from services.agent.settings import AgentSettings
from tests.agent.cores import Manager as GenerationManager
from tests.agent.test_engine import InProcessTools, request
from tests.agent.test_generation_retention import GatedSessions


class GatedStore:
    """A run store whose saves of closed records wait for `gate`, so a test can act
    while the generation's final save is still under way."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.final_save_started = asyncio.Event()
        self.saved: list[RunRecord] = []

    async def open(self) -> int:
        return 0

    async def save(self, run: RunRecord) -> None:
        if run.status != "running":
            self.final_save_started.set()
            await self.gate.wait()
        self.saved.append(run)

    async def get(self, generation_id: str) -> RunRecord | None:
        return None

    async def close(self) -> None:
        pass


@pytest.fixture
def no_cycle_collector() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def manager(
    store: GatedStore | None = None, sessions: GatedSessions | None = None
) -> GenerationManager:
    settings = replace(
        AgentSettings(demo_pace_s=0.0),
        retained_generations=1,
        retained_bytes=0,
        retained_seconds=0,
    )
    return GenerationManager(settings, InProcessTools(), sessions or GatedSessions(), store=store)


async def stream_to_the_end(generation: Generation) -> None:
    """What a GenerateCode stream does: hold the generation, read every event, let go."""
    generation.acquire()
    try:
        async for _ in generation.batches(0):
            pass
    finally:
        generation.release()


async def test_the_last_stream_leaving_a_finished_generation_does_not_cancel_its_save() -> None:
    store = GatedStore()
    m = manager(store)
    generation = m.start(request(generation_id="g1"))
    await stream_to_the_end(generation)  # ends at generation_complete, mid final save
    await store.final_save_started.wait()
    assert generation.finished
    assert generation.cancel() is False  # nothing left to cancel: the save is its own

    store.gate.set()
    assert generation.task is not None
    await generation.task  # completes; before the fix it raised CancelledError
    assert not generation.task.cancelled()
    assert [r.status for r in store.saved][-1] == "completed"


@pytest.mark.usefixtures("no_cycle_collector")
async def test_a_retired_streamed_generation_is_freed_without_the_cycle_collector() -> None:
    store = GatedStore()
    m = manager(store)
    first = m.start(request(generation_id="first"))
    await stream_to_the_end(first)  # the stream leaves during the final save, as over gRPC
    await store.final_save_started.wait()
    store.gate.set()
    assert first.task is not None
    await asyncio.wait([first.task])
    gone = weakref.ref(first)
    del first

    await stream_to_the_end(m.start(request(generation_id="second")))  # retires "first"
    assert [g.id for g in m.generations()] == ["second"]
    assert gone() is None


@pytest.mark.usefixtures("no_cycle_collector")
async def test_a_retired_cancelled_generation_is_freed_without_the_cycle_collector() -> None:
    sessions = GatedSessions()
    m = manager(sessions=sessions)
    slow = m.start(request(generation_id="slow", prompt=replace(request().prompt, text="slow")))
    await sessions.slow_started.wait()
    assert slow.cancel()
    task = slow.task
    assert task is not None
    await asyncio.wait([task])
    assert task.cancelled()
    assert slow.status == "cancelled"
    gone = weakref.ref(slow)
    del slow, task

    sessions.gate.set()
    await stream_to_the_end(m.start(request(generation_id="next")))  # retires "slow"
    assert [g.id for g in m.generations()] == ["next"]
    assert gone() is None
