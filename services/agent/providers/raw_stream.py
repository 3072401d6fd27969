"""The read loop of the sessions that read a model's SSE body raw."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
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
    ended: Callable[[], bool] | None = None,
) -> None:
    """Reads the body to its end, past the reply's last record, so a connection that
    breaks before the HTTP response ends still fails the turn; or, given `ended`, up to
    the read after which it says the reply ended (OpenAI's `data: [DONE]`, where the SDK
    stops reading too). `timeout_s` bounds each read, for an SDK that puts no limit on a
    streamed body.

    This runs once per network read, which at a model's pace is once per delta: without
    a timeout no `asyncio.timeout` is entered (a measurable share of a loaded agent).
    """
    async with aclosing(sse.event_batches(chunks)) as batches:
        while True:
            with mapped:
                if timeout_s is None:
                    batch = await anext(batches, None)
                else:
                    async with asyncio.timeout(timeout_s):
                        batch = await anext(batches, None)
                if batch is None:
                    return
                events = reader.feed(batch)
            for event in events:
                await emit(event)
            if reader.failure is not None:
                raise reader.failure
            if ended is not None and ended():
                return
