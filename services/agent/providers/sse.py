"""Reading a model's server-sent-event stream at close to the cost of the bytes.

The SDKs build a typed object for every event (tens of microseconds each); a
create_file streams thousands of tiny argument deltas, so that parsing was most of
the agent's CPU. The sessions still let the SDK make the request (auth, retries,
status errors); they then read the raw HTTP body through `event_batches`, which
splits each network read into its complete events and decodes their JSON with
orjson, so a burst of deltas that arrived together is handled in one step.

Only what the providers send is supported: `data:` lines (several are joined with
"\\n", as the SSE format says), `event:` names, comments and both line endings
(LF, CRLF). An event cut off by the end of the stream is dropped, as the format
says; the sessions then report the stream as ended early.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable
from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event: its `event:` name ("" when none) and its `data` text."""

    name: str
    data: bytes


class SseDecoder:
    """Incremental SSE parser: `feed` takes bytes as they arrive and returns the
    events they completed."""

    __slots__ = ("_data", "_name", "_partial")

    def __init__(self) -> None:
        self._name = ""
        self._data: list[bytes] = []
        self._partial: list[bytes] = []  # the current line, not yet ended

    def feed(self, chunk: bytes) -> list[SseEvent]:
        if b"\n" not in chunk:
            self._partial.append(chunk)
            return []
        if self._partial:
            self._partial.append(chunk)
            chunk = b"".join(self._partial)
            self._partial.clear()
        lines = chunk.split(b"\n")
        tail = lines.pop()
        if tail:
            self._partial.append(tail)
        events: list[SseEvent] = []
        data = self._data
        for line in lines:
            if line[-1:] == b"\r":
                line = line[:-1]
            if not line:
                if data:
                    events.append(
                        SseEvent(self._name, data[0] if len(data) == 1 else b"\n".join(data))
                    )
                    self._data = data = []
                self._name = ""
            elif line[:5] == b"data:":
                data.append(line[6:] if line[5:6] == b" " else line[5:])
            elif line[:6] == b"event:":
                self._name = line[6:].strip().decode()
            # Comments (":…"), `id:` and `retry:` carry nothing the sessions use.
        return events


async def event_batches(chunks: AsyncIterable[bytes]) -> AsyncGenerator[list[SseEvent], None]:
    """The events of a byte stream, one list per read that completed any."""
    decoder = SseDecoder()
    async for chunk in chunks:
        if events := decoder.feed(chunk):
            yield events


def loads(data: bytes) -> Any:
    """An event's JSON payload (orjson: several times faster than `json.loads`)."""
    return orjson.loads(data)


JSONDecodeError = orjson.JSONDecodeError
