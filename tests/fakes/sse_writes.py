"""A loopback server that writes an SSE body exactly as a test scripts its writes.

The other fakes write one record at a time, so how records fall into the client's
network reads is up to timing. Here each `bytes` step is one write and each awaitable
step is waited for before the next write, so a test can put a burst in one read, or
cut a record between two reads by waiting for the client to act on the first part.

    writes = SseWrites([frames_a, client_saw_first.wait, frames_b], end="abort")
    origin = await writes.start()        # every POST path answers with the script
    ...
    await writes.stop()

`end`: "eof" ends the body cleanly, "abort" cuts the connection. `merged` is how tests
compare events when they do not control the reads.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Literal

from aiohttp import web

from services.agent.providers.base import AssistantDelta, StreamEvent, ThinkingDelta, ToolCallDelta
from tests.fakes import serve_on_loopback

Step = bytes | Callable[[], Awaitable[object]]


class SseWrites:
    def __init__(self, steps: Sequence[Step], *, end: Literal["eof", "abort"] = "eof") -> None:
        self._steps = steps
        self._end = end
        self._runner: web.AppRunner | None = None
        self.requests = 0

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        self._runner, origin = await serve_on_loopback(app)
        return origin

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for step in self._steps:
            if isinstance(step, bytes):
                await response.write(step)
            else:
                await step()
        if self._end == "abort" and request.transport is not None:
            request.transport.abort()
            return response
        await response.write_eof()
        return response


def merged(events: Sequence[StreamEvent]) -> list[StreamEvent]:
    """What a stream's events say whatever reads they fell into: consecutive deltas of
    one kind (one tool call's, for arguments) joined, as a session merges a burst."""
    out: list[StreamEvent] = []
    for event in events:
        last = out[-1] if out else None
        if isinstance(event, ToolCallDelta):
            if isinstance(last, ToolCallDelta) and last.call_id == event.call_id:
                out[-1] = replace(
                    last, arguments_delta=last.arguments_delta + event.arguments_delta
                )
                continue
        elif type(last) is type(event):
            assert isinstance(last, AssistantDelta | ThinkingDelta)
            out[-1] = type(event)(last.text + event.text)
            continue
        out.append(event)
    return out
