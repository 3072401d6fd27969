"""The live-preview chain on a simulated clock, built from the production objects.

A streamed `create_file` is replayed from model deltas to browser frames through the code
that runs in production: `ArgumentScanner` (decoding, as the engine's preview does), the
agent's `EventLog` (the one place deltas are merged, on its tick timer), the servicer's
`chunk_events` (`event_to_proto` and the cut into messages), and the gateway's `Relay`
with its `FrameBuilder` and `SetCodePolicy` (the setCode rule and its timer). Only the
transports are replaced: the log's batches reach the relay as in-memory messages and the
relay writes to a socket that records what it is sent.

The event loop's clock is simulated (`SimulatedClockLoop`): when nothing is ready it jumps
to the next timer instead of sleeping, so every timer fires at its exact time, a minute of
streaming replays in a fraction of a second, and a busy machine cannot change the result.
"""

from __future__ import annotations

import asyncio
import json
import selectors
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import grpc
from aiohttp import WSMessage, WSMsgType, web
from s2c.agent.v1 import agent_service_pb2 as pb

from services.agent.argscan import ArgumentScanner
from services.agent.eventlog import EventLog
from services.agent.events import (
    CodeDelta,
    CodeSnapshot,
    Event,
    GenerationComplete,
    ToolResult,
    ToolStart,
)
from services.agent.servicer import chunk_events
from services.gateway.frames import FrameBuilder
from services.gateway.metrics import GatewayMetrics
from services.gateway.preview_policy import PreviewPolicyConfig
from services.gateway.relay import Relay

# Ids as real ones look, so event sizes are those of production.
GENERATION_ID = "0f8fad5b-d9cb-469f-a165-70867728950e"
CALL_ID = "call_Xq3vLr8mT2pWc9ZkYb4nHs1d"
VARIANT = 1
PATH = "index.html"


class _JumpingSelector(selectors.DefaultSelector):
    """Never blocks: with nothing ready, moves the loop's clock on by the timeout."""

    def __init__(self, loop: SimulatedClockLoop) -> None:
        super().__init__()
        self._loop = loop

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = super().select(0)
        if not ready and timeout is None:
            raise RuntimeError("the simulation waits for nothing: it would hang")
        if not ready and timeout:
            self._loop.now += timeout
        return ready


class SimulatedClockLoop(asyncio.SelectorEventLoop):
    """An event loop whose `time()` starts at 0 and advances only to the next timer."""

    def __init__(self) -> None:
        self.now = 0.0
        super().__init__(_JumpingSelector(self))

    def time(self) -> float:
        return self.now


@dataclass
class Replay:
    """What the browser got: (time, code length, bytes) of each setCode frame."""

    set_code: list[tuple[float, int, int]] = field(default_factory=list)
    arrivals: list[tuple[float, int]] = field(default_factory=list)  # (time, content so far)
    code_deltas: list[pb.GenerationEvent] = field(default_factory=list)  # what the agent sent
    # (time, code length after it) of each code_delta as the agent's stream yields it: what
    # a gRPC client (our UI included) sees.
    code_seen: list[tuple[float, int]] = field(default_factory=list)
    code: str = ""  # the browser's last setCode value


class _RecordingSocket:
    """The browser end of the relay's WebSocket: records setCode frames with their time."""

    def __init__(self, loop: asyncio.AbstractEventLoop, replay: Replay) -> None:
        self._loop = loop
        self._replay = replay
        self._closed = asyncio.Event()
        self.closed = False
        self.close_code: int | None = None

    async def send_frame(self, data: bytes, opcode: WSMsgType) -> None:
        text = data.decode()
        frame = json.loads(text)
        if frame["type"] == "setCode":
            self._replay.code = frame["value"]
            self._replay.set_code.append(
                (self._loop.time(), len(frame["value"]), len(text.encode()))
            )

    async def close(self, *, code: int = 1000, message: bytes = b"") -> bool:
        self.closed, self.close_code = True, code
        self._closed.set()
        return True

    def __aiter__(self) -> _RecordingSocket:
        return self

    async def __anext__(self) -> WSMessage:
        # The upstream UI sends nothing after its params.
        await self._closed.wait()
        raise StopAsyncIteration


async def _agent(log: EventLog, pieces: Sequence[str], times: Sequence[float]) -> list[Any]:
    """The model's deltas at their times, decoded and published as the engine's preview
    does (services/agent/engine.py `_Preview`); then the tool's result."""
    loop = asyncio.get_running_loop()
    scanner = ArgumentScanner(("path", "content"))
    arrivals: list[tuple[float, int]] = []
    started, decoded = False, 0
    for piece, due in zip(pieces, times, strict=True):
        if due > loop.time():
            await asyncio.sleep(due - loop.time())
        for fragment in scanner.feed(piece):
            if fragment.key != "content" or (not fragment.text and fragment.offset > 0):
                continue
            if not started:
                started = True
                log.publish(VARIANT, CALL_ID, ToolStart("create_file", {"path": PATH}))
            log.publish(VARIANT, CALL_ID, CodeDelta(fragment.offset, fragment.text))
            decoded = fragment.offset + len(fragment.text)
        arrivals.append((due, decoded))
    # The turn is over: the tool ran (in no time here) and the file changed.
    content = json.loads("".join(pieces))["content"]
    log.publish(VARIANT, CALL_ID, CodeSnapshot(PATH, content))
    log.publish(VARIANT, CALL_ID, ToolResult("create_file", {"path": PATH}, True))
    log.publish(0, "", GenerationComplete("completed"))
    return arrivals


async def _responses(log: EventLog, replay: Replay) -> AsyncIterator[pb.GenerateCodeResponse]:
    """The agent's GenerateCode stream: every event committed since the last message,
    cut into messages by the servicer's own rule."""
    loop = asyncio.get_running_loop()
    events: Sequence[Event]
    async for events in log.batches():
        for message in chunk_events(events, pb.GenerateCodeResponse):
            code = [e for e in message.events if e.HasField("code_delta")]
            replay.code_deltas += code
            replay.code_seen += [
                (loop.time(), e.code_delta.offset + len(e.code_delta.text)) for e in code
            ]
            yield message


async def _replay(
    pieces: Sequence[str],
    times: Sequence[float],
    config: PreviewPolicyConfig,
    code_tick_s: float | None,
) -> Replay:
    loop = asyncio.get_running_loop()
    replay = Replay()
    log = EventLog(GENERATION_ID, code_tick_s=code_tick_s)
    socket = _RecordingSocket(loop, replay)
    relay = Relay(
        cast(web.WebSocketResponse, socket),
        cast(grpc.aio.UnaryStreamCall[Any, pb.GenerateCodeResponse], _responses(log, replay)),
        FrameBuilder(config, loop.time),
        "simulated agent",
        GatewayMetrics(),
    )
    relaying = asyncio.create_task(relay.run())
    replay.arrivals = await _agent(log, pieces, times)
    await relaying
    return replay


def replay_stream(
    pieces: Sequence[str],
    times: Sequence[float],
    config: PreviewPolicyConfig,
    *,
    code_tick_s: float | None = None,
) -> Replay:
    """Streams `create_file` arguments cut into `pieces`, piece i arriving at `times[i]`
    (seconds from the start), through agent and gateway on a simulated clock; the event
    log's code tick is the production one unless `code_tick_s` says otherwise."""
    loop = SimulatedClockLoop()
    try:
        return loop.run_until_complete(_replay(pieces, times, config, code_tick_s))
    finally:
        loop.close()


# Bytes around each gRPC message besides the protobuf: 5-byte length prefix and a 9-byte
# HTTP/2 DATA frame header.
GRPC_TRANSPORT = 5 + 9


def wire_bytes(events: Sequence[pb.GenerationEvent], *, with_ids: bool = False) -> int:
    """The events' protobuf size plus framing, as if each went in a message of its own
    (what a paced stream does). `with_ids`: as if each carried its `generation_id` and
    `event_id`, as code_deltas did before they left them empty."""
    if not with_ids:
        return sum(e.ByteSize() + GRPC_TRANSPORT for e in events)
    total = 0
    for event in events:
        named = pb.GenerationEvent()
        named.CopyFrom(event)
        named.generation_id, named.event_id = GENERATION_ID, CALL_ID
        total += named.ByteSize() + GRPC_TRANSPORT
    return total


def payload_bytes(events: Sequence[pb.GenerationEvent], content: str) -> int:
    """UTF-8 bytes of the events' code text; raises unless they are append-only (each
    starts where the last ended, from 0) and add up to exactly `content`."""
    end = 0
    for event in events:
        if event.code_delta.offset != end:
            raise AssertionError(f"code_delta at {event.code_delta.offset}, code ended at {end}")
        end += len(event.code_delta.text)
    text = "".join(e.code_delta.text for e in events)
    if text != content:
        raise AssertionError("the code_deltas do not add up to the content")
    return len(text.encode())


def delta_lags(
    seen: Sequence[tuple[float, int]], arrivals: Sequence[tuple[float, int]]
) -> list[float]:
    """From each delta's arrival to the first of `seen` (time, code length) showing
    everything it decoded. `seen` is in time order with the code never shrinking."""
    lags, j, decoded = [], 0, 0
    for now, length in arrivals:
        if length <= decoded:
            continue  # this delta decoded nothing new
        decoded = length
        while seen[j][1] < length or seen[j][0] < now:
            j += 1
        lags.append(seen[j][0] - now)
    return lags
