"""The read loop of the sessions that read a model's SSE body raw (Anthropic, Gemini)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Protocol

from services.agent.providers import sse
from services.agent.providers.base import OnEvent, ProviderError, StreamEvent
from services.agent.providers.errors import MappedErrors


class BatchReader(Protocol):
    """Turns one network read's records into stream events; a failure the stream
    reported is kept until the events before it are forwarded."""

    failure: ProviderError | None

    def feed(self, batch: list[sse.SseEvent]) -> list[StreamEvent]: ...


async def forward(
    chunks: AsyncIterator[bytes],
    reader: BatchReader,
    emit: OnEvent,
    mapped: MappedErrors,
    timeout_s: float | None = None,
) -> None:
    """Reads the body to its end, past the reply's last record, so a connection that
    breaks before the HTTP response ends still fails the turn. `timeout_s` bounds each
    read, for an SDK that puts no limit on a streamed body."""
    async with aclosing(sse.event_batches(chunks)) as batches:
        while True:
            with mapped:
                async with asyncio.timeout(timeout_s):
                    batch = await anext(batches, None)
                if batch is None:
                    return
                events = reader.feed(batch)
            for event in events:
                await emit(event)
            if reader.failure is not None:
                raise reader.failure
