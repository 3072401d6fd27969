"""What the provider tests share: the event recorder, the fake servers and SDK clients
as fixtures, and one turn against a scripted SSE writer.

The fixtures go by provider here; a test module binds the ones it uses to the names its
tests ask for (`fake = sessions.gemini_fake`), so every module's fake is `fake`. The
client fixtures take that `fake`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import anthropic
import pytest
from google import genai
from google.genai import types

from services.agent.providers.base import (
    ProviderError,
    ProviderSession,
    ProviderTurn,
    StreamEvent,
)
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.sse_writes import SseWrites, Step

ANTHROPIC_KEY = "sk-ant-FAKE-do-not-leak-0123456789"
GEMINI_KEY = "AIzaFAKE-do-not-leak-0123456789"


class Recorder:
    """The session's `on_event`: keeps every event; `first` is set by the first one."""

    def __init__(self) -> None:
        self.events: list[StreamEvent] = []
        self.first = asyncio.Event()

    async def __call__(self, event: StreamEvent) -> None:
        self.events.append(event)
        self.first.set()

    def drain(self) -> list[StreamEvent]:
        out, self.events = self.events, []
        return out


@pytest.fixture
async def anthropic_fake() -> AsyncIterator[FakeAnthropic]:
    server = FakeAnthropic()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def anthropic_client(fake: FakeAnthropic) -> AsyncIterator[anthropic.AsyncAnthropic]:
    sdk = anthropic.AsyncAnthropic(
        api_key=ANTHROPIC_KEY,
        base_url=fake.base_url,
        max_retries=0,
        _strict_response_validation=True,
    )
    yield sdk
    await sdk.close()


def gemini_sdk(base_url: str, **options: object) -> genai.Client:
    return genai.Client(
        api_key=GEMINI_KEY,
        http_options=types.HttpOptions(
            base_url=base_url,
            api_version="v1beta",
            retry_options=types.HttpRetryOptions(attempts=1),
            **options,  # type: ignore[arg-type]
        ),
    )


@pytest.fixture
async def gemini_fake() -> AsyncIterator[FakeGemini]:
    server = FakeGemini()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def gemini_client(fake: FakeGemini) -> AsyncIterator[genai.Client]:
    sdk = gemini_sdk(fake.base_url)
    yield sdk
    await sdk.aio.aclose()


@pytest.fixture
async def openai_fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


async def scripted_turn(
    session_at: Callable[[str], ProviderSession], steps: list[Step], events: Recorder
) -> ProviderTurn:
    """One turn of the session `session_at(origin)` against a server writing `steps`."""
    writes = SseWrites(steps)
    origin = await writes.start()
    session = session_at(origin)
    try:
        return await session.stream_turn(events)
    finally:
        await session.close()
        await writes.stop()


async def failure_of(session: ProviderSession, events: Recorder) -> ProviderError:
    """The error the session's next turn fails with (the test fails if it does not)."""
    with pytest.raises(ProviderError) as caught:
        await session.stream_turn(events)
    return caught.value
