"""Our UI's append-only code stream (`codeStream: "append"`): WebSocket bytes and freshness.

Run alone: `.venv/bin/python bench/ui_stream.py` (a few seconds).

A streamed `create_file` is replayed on a simulated clock through the production chain
(bench/chain.py: scanner, event log, servicer chunks, the gateway's `Relay` and
`FrameBuilder`), once with the built-in UI's `appendCode` frames and once with whole-file
`setCode`s as the upstream UI gets them, on the same stream in the same run. For each:
frames, bytes of JSON text on the WebSocket and their ratio to the content's UTF-8 bytes,
split into the frames' values as JSON strings (the text with its `\\"` and `\\n` escapes:
repeated text shows here) and the framing around them
(`{"type":…,"variantIndex":…,"value":"…"}`), the bytes after permessage-deflate (which
Chromium and aiohttp negotiate: level 1, context takeover, as aiohttp sends it) and
delta-to-visible p50 / p99 / max (from a model delta to the first frame that gives the
client everything it decoded; "agent max": to the agent's stream, the part before the
gateway). Then the append interval against its bytes and freshness.
"""

from __future__ import annotations

import asyncio
import json
import sys
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import grpc
from aiohttp import WSMessage, WSMsgType, web
from s2c.agent.v1 import agent_service_pb2 as pb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: find bench/

from bench.chain import GENERATION_ID, SimulatedClockLoop, delta_lags
from bench.chain import Replay as ChainRecord
from bench.chain import _agent as stream_create_file
from bench.chain import _responses as agent_stream
from bench.preview import DELTA, KB, arguments, deltas, make_page, quantile, table, timed
from services.agent.eventlog import DEFAULT_TICK_S, EventLog
from services.gateway.frames import FrameBuilder
from services.gateway.metrics import GatewayMetrics
from services.gateway.preview_policy import PreviewPolicyConfig
from services.gateway.relay import Relay

PAGE_KB = 30
RATE = 50.0 * DELTA  # 50 deltas/s of 8 characters
BIG_KB, BIG_RATE = 400, 20_000.0
INTERVALS_MS = (25, 50, 100, 250, 500, 1000)


def ws_header(size: int) -> int:
    """A server frame's header (no mask): 2 bytes, +2 from 126 bytes, +8 from 64 KiB."""
    return 2 if size < 126 else 4 if size < 65536 else 10


@dataclass
class Frames:
    """What the client got: per code frame (time, the code it holds after it, JSON text)."""

    code: list[tuple[float, int, str]] = field(default_factory=list)
    client: str = ""  # the client's code after applying every frame as our UI does
    whole: int = 0  # setCode frames

    def json_bytes(self) -> int:
        return sum(len(text.encode()) for _, _, text in self.code)

    def escaped_text_bytes(self) -> int:
        """The frames' `value`s as JSON strings (escapes included, quotes not)."""
        return sum(
            len(json.dumps(json.loads(text)["value"], ensure_ascii=False).encode()) - 2
            for _, _, text in self.code
        )

    def deflated_bytes(self) -> int:
        """permessage-deflate as aiohttp sends it, plus each WebSocket frame header."""
        deflate = zlib.compressobj(1, zlib.DEFLATED, -15)
        total = 0
        for _, _, text in self.code:
            size = len(deflate.compress(text.encode()) + deflate.flush(zlib.Z_SYNC_FLUSH)) - 4
            total += size + ws_header(size)
        return total


class _Socket:
    """The browser end of the relay's WebSocket: records each code frame with its time."""

    def __init__(self, loop: asyncio.AbstractEventLoop, frames: Frames) -> None:
        self._loop, self._frames = loop, frames
        self._closed = asyncio.Event()
        self.closed = False

    async def send_frame(self, data: bytes, opcode: WSMsgType) -> None:
        text = data.decode()
        out = json.loads(text)
        if out["type"] == "setCode":
            self._frames.client = out["value"]
            self._frames.whole += 1
        elif out["type"] == "appendCode":
            self._frames.client += out["value"]
        else:
            return
        self._frames.code.append((self._loop.time(), len(self._frames.client), text))

    async def close(self, *, code: int = 1000, message: bytes = b"") -> bool:
        self.closed = True
        self._closed.set()
        return True

    def __aiter__(self) -> _Socket:
        return self

    async def __anext__(self) -> WSMessage:
        await self._closed.wait()
        raise StopAsyncIteration


async def _replay(
    pieces: Sequence[str],
    times: Sequence[float],
    config: PreviewPolicyConfig,
    append: bool,
    resumable: bool,
) -> tuple[Frames, ChainRecord]:
    loop = asyncio.get_running_loop()
    frames, record = Frames(), ChainRecord()
    log = EventLog(GENERATION_ID)
    relay = Relay(
        cast(web.WebSocketResponse, _Socket(loop, frames)),
        cast(grpc.aio.UnaryStreamCall[Any, pb.GenerateCodeResponse], agent_stream(log, record)),
        FrameBuilder(config, loop.time, append=append, resumable=resumable),
        "simulated agent",
        GatewayMetrics(),
    )
    relaying = asyncio.create_task(relay.run())
    record.arrivals = await stream_create_file(log, pieces, times)
    await relaying
    return frames, record


@dataclass(frozen=True)
class Run:
    content: str
    frames: Frames
    lags: list[float]  # model delta -> the client has it
    agent_lags: list[float]  # model delta -> the agent's stream yields it

    def row(self, name: str) -> list[str]:
        utf8 = len(self.content.encode())
        total, text = self.frames.json_bytes(), self.frames.escaped_text_bytes()
        return [
            name,
            f"{len(self.frames.code)}",
            f"{self.frames.whole}",
            f"{total}",
            f"{total / utf8:.3f}x",
            f"{text / utf8:.3f}x",
            f"{(total - text) / utf8 * 100:.1f}%",
            f"{self.frames.deflated_bytes() / utf8:.3f}x",
            f"{quantile(self.lags, 0.5) * 1e3:.0f}",
            f"{quantile(self.lags, 0.99) * 1e3:.0f}",
            f"{max(self.lags) * 1e3:.0f}",
            f"{max(self.agent_lags) * 1e3:.0f}",
        ]


def run(
    size_kb: int, rate: float, config: PreviewPolicyConfig, *, append: bool, resumable: bool = False
) -> Run:
    content = make_page(size_kb * KB)
    pieces = deltas(arguments(content))
    step = len(content) / rate / len(pieces)
    times = [i * step for i in range(1, len(pieces) + 1)]
    loop = SimulatedClockLoop()
    try:
        frames, record = loop.run_until_complete(_replay(pieces, times, config, append, resumable))
    finally:
        loop.close()
    assert frames.client == content, "the client did not end with the file"
    seen = [(t, length) for t, length, _ in frames.code]
    lags = delta_lags(seen, record.arrivals)
    return Run(content, frames, lags, delta_lags(record.code_seen, record.arrivals))


COLUMNS = (
    "stream|frames|whole|JSON B|JSON/content|values/content|framing|deflated/content"
    "|p50 ms|p99 ms|max ms|agent max ms"
)


def main() -> None:
    config = PreviewPolicyConfig()
    interval_ms = config.append_interval_s * 1e3
    page = f"{PAGE_KB} KB @ 50 deltas/s"
    ours = run(PAGE_KB, RATE, config, append=True)
    # What the built-in UI gets: it is resumable, so every code frame also carries `seq`.
    ours_seq = run(PAGE_KB, RATE, config, append=True, resumable=True)
    whole = run(PAGE_KB, RATE, config, append=False)
    big = run(BIG_KB, BIG_RATE, config, append=True)
    big_whole = run(BIG_KB, BIG_RATE, config, append=False)
    _, upstream, _ = timed(PAGE_KB, RATE, config, None)
    table(
        f"Code frames on the WebSocket (appends every >= {interval_ms:.0f} ms; content: the "
        "file's UTF-8 bytes; values: the frames' text as JSON strings, escapes included; "
        "framing: the rest of the JSON, as % of the content)",
        COLUMNS,
        [
            ours.row(f"{page}, appends"),
            ours_seq.row(f"{page}, appends + seq (our UI)"),
            whole.row(f"{page}, setCode (upstream UI)"),
            big.row(f"{BIG_KB} KB @ 20k char/s, our UI appends"),
            big_whole.row(f"{BIG_KB} KB @ 20k char/s, setCode (upstream UI)"),
        ],
    )
    print(
        f"  upstream's own rule (the whole file every 40 characters) on the {page} stream: "
        f"{upstream.frames} frames, {upstream.bytes} B"
    )
    sweep = [
        run(PAGE_KB, RATE, replace(config, append_interval_s=ms / 1e3), append=True).row(
            f"{page}, appends every >= {ms} ms"
        )
        for ms in INTERVALS_MS
    ]
    table("The append interval: bytes against freshness", COLUMNS, sweep)

    utf8 = len(ours.content.encode())
    ratio = ours.frames.json_bytes() / utf8
    bound = DEFAULT_TICK_S + config.append_interval_s
    checks = [
        (f"{page}: no whole-file frame, the client ends with the file", ours.frames.whole == 0),
        (f"{page}: JSON bytes <= 1.2x the content ({ratio:.2f}x)", ratio <= 1.2),
        (
            f"{page}: deflated bytes <= 1.2x the content, seq included (our UI)",
            ours_seq.frames.deflated_bytes() <= 1.2 * utf8,
        ),
        (
            f"{page}: every delta visible within one {DEFAULT_TICK_S * 1e3:.0f} ms agent tick "
            f"+ one interval ({bound * 1e3:.0f} ms)",
            max(ours.agent_lags) <= DEFAULT_TICK_S + 1e-9 and max(ours.lags) <= bound + 1e-9,
        ),
        (
            f"{page}: p50 <= 60 ms, p99 <= 150 ms (the setCode targets)",
            quantile(ours.lags, 0.5) <= 0.06 and quantile(ours.lags, 0.99) <= 0.15,
        ),
        (
            f"{BIG_KB} KB fast: JSON bytes <= 1.2x the content",
            big.frames.json_bytes() <= 1.2 * len(big.content.encode()),
        ),
    ]
    print("\ntargets")
    for label, ok in checks:
        print(f"  {'met    ' if ok else 'NOT MET'}  {label}")


if __name__ == "__main__":
    main()
