"""A generation is cancelled only when someone cancels it: a stream that goes away leaves
it running for the resume grace, and its record says what ended it."""

from __future__ import annotations

import asyncio
from typing import Any

from services.agent.domain import Prompt
from services.agent.generation import (
    CANCELLED_AT_SHUTDOWN,
    CANCELLED_BY_CLIENT,
    Generation,
    abandoned,
)
from tests.agent.test_engine import request
from tests.agent.test_generation_retention import GatedSessions
from tests.agent.test_generation_retention import manager as make_manager


async def ended(generation: Generation) -> None:
    """Its task done, however it ended (a cancelled one raises CancelledError)."""
    assert generation.task is not None
    await asyncio.wait({generation.task})


def slow(sessions: GatedSessions, **limits: Any) -> tuple[Any, Generation]:
    """A manager and a generation whose model waits for `sessions.gate`."""
    m = make_manager(sessions, **limits)
    return m, m.start(request(prompt=Prompt(text="slow page")))


async def test_a_stream_that_went_away_leaves_the_generation_running_for_a_reattach() -> None:
    sessions = GatedSessions()
    _, generation = slow(sessions, resume_grace_s=60.0)
    await sessions.slow_started.wait()
    generation.acquire()
    generation.release()  # the only stream went away (a gateway restarting, say)
    generation.acquire()  # a WatchGeneration re-attached within the grace

    sessions.gate.set()
    await ended(generation)

    assert generation.status == "completed"
    assert generation.error == ""


async def test_nobody_reattaching_within_the_grace_cancels_it_and_the_record_says_so() -> None:
    sessions = GatedSessions()
    m, generation = slow(sessions, resume_grace_s=0.01)
    await sessions.slow_started.wait()
    generation.acquire()
    generation.release()

    await ended(generation)

    assert generation.status == "cancelled"
    assert generation.error == abandoned(0.01)
    record = m.core.archive.snapshot(generation)
    assert (record.status, record.error) == ("cancelled", abandoned(0.01))


async def test_a_cancel_asked_for_stops_it_at_once_and_says_who() -> None:
    sessions = GatedSessions()
    _, generation = slow(sessions, resume_grace_s=60.0)
    await sessions.slow_started.wait()
    generation.acquire()  # still watched: only the cancel can end it

    assert generation.cancel()
    await ended(generation)

    assert (generation.status, generation.error) == ("cancelled", CANCELLED_BY_CLIENT)


async def test_a_shutdown_past_its_grace_says_it_ended_the_generation() -> None:
    sessions = GatedSessions()
    m, generation = slow(sessions, resume_grace_s=60.0)
    await sessions.slow_started.wait()

    await m.shutdown(0.0)

    assert (generation.status, generation.error) == ("cancelled", CANCELLED_AT_SHUTDOWN)
