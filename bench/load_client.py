"""The browser side of `bench/load_real.py`: one process of several, run by the bench.

`python bench/load_client.py CONFIG_JSON` keeps its share of the bench's N generation
slots busy (aiohttp WebSockets, one generation per socket, like the upstream UI): slot i
opens its first socket at `start_at + i × ramp / N` and a new one whenever the last one
closes (one second later when it was refused). At `window_end` it closes every socket
and prints one JSON line, a `ClientResult`.

Delta to visible. The fake model (`bench/sse_fake.py`) writes each `create_file`
argument delta as an 8-hex-digit stamp of its send time, and the page's characters need
no JSON escape, so a `setCode` frame's value is the page verbatim, and it ends the frame
(`{"type":"setCode","variantIndex":I,"value":"…"}`). The frame's length then says how
many stamps it shows (`Page.visible`); the client reads only the stamps it had not seen
before for that variant, straight out of the frame text, without decoding the JSON: for
each, the time from its send to this frame's arrival. A setCode that breaks those rules
is counted in `bad_frames`, never guessed at.

How a generation ended (over the whole run, ramp included):
completed — every variant sent `variantComplete`; refused — an `error` frame saying the
agents are busy; failed — any other `error` or a `variantError`; silent — the socket
closed with neither (must be 0); open — still running at the end (cut by the bench);
stalled — open for longer than `stall_s` (a generation that would not complete).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Final

import aiohttp
import uvloop

ROOT: Final = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: find bench/

from bench.loadmodel_client import PARAMS, frame_type  # noqa: E402
from bench.sse_fake import STAMP_CHARS, Page  # noqa: E402

SET_CODE: Final = '{"type":"setCode","variantIndex":'
VALUE: Final = ',"value":"'
BUSY: Final = "busy"  # the gateway's refusal: "The agent is busy (…). Please retry …"
STAMP_MASK: Final = 0xFFFFFFFF


@dataclass
class ClientConfig:
    url: str
    slots: list[int]  # this client's slot indices, of `generations`
    generations: int
    stamps: int
    epoch_us: int
    start_at: float  # CLOCK_MONOTONIC s
    ramp_s: float
    window_start: float
    window_end: float
    stall_s: float


@dataclass
class ClientResult:
    frames: int = 0  # in the window
    frame_bytes: int = 0
    latencies_us: list[int] = field(default_factory=list)  # in the window
    completed: int = 0
    refused: int = 0
    failed: int = 0
    silent: int = 0
    open: int = 0
    stalled: int = 0
    bad_frames: int = 0
    live_variants: int = 0
    max_loop_lag_ms: float = 0.0
    samples: list[str] = field(default_factory=list)  # error and silent endings

    def note(self, text: str) -> None:
        if len(self.samples) < 5:
            self.samples.append(text[:300])


class Generation:
    """What one socket has shown so far."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.shown: dict[int, int] = {}  # variant → stamps already seen
        self.variants = 0
        self.complete = 0
        self.error = ""
        self.refused = False

    def set_code(self, data: str, now_us: int, epoch_us: int, out: list[int] | None) -> bool:
        """Reads the newly shown stamps of a setCode frame; False if the frame is not as
        the fake's page makes it."""
        value = data.find(VALUE, len(SET_CODE))
        if not data.startswith(SET_CODE) or value < 0 or not data.endswith('"}'):
            return False
        variant = int(data[len(SET_CODE) : value])
        start = value + len(VALUE)
        visible = self.page.visible(len(data) - start - 2)
        first = start + len(self.page.head)
        now_rel = now_us - epoch_us
        for j in range(self.shown.get(variant, 0), visible):
            at = first + STAMP_CHARS * j
            try:
                sent = int(data[at : at + STAMP_CHARS], 16)
            except ValueError:
                return False
            if out is not None:
                out.append((now_rel - sent) & STAMP_MASK)
        self.shown[variant] = max(visible, self.shown.get(variant, 0))
        return True

    def other(self, kind: str, data: str) -> None:
        if kind == "variantCount":
            self.variants = int(json.loads(data)["value"])
        elif kind == "variantComplete":
            self.complete += 1
        elif kind in ("error", "variantError") and not self.error:
            self.error = data
            self.refused = kind == "error" and BUSY in data


async def run_client(config: ClientConfig) -> ClientResult:
    result = ClientResult()
    params = json.dumps(PARAMS)
    page = Page(config.stamps)
    open_since: dict[int, float] = {}  # slot → when its current socket opened
    live: dict[int, Generation] = {}

    async def one(slot: int, session: aiohttp.ClientSession) -> bool:
        """Runs one generation; True if the next may start at once."""
        generation = Generation(page)
        async with session.ws_connect(config.url, max_msg_size=0, heartbeat=None) as ws:
            await ws.send_str(params)
            open_since[slot], live[slot] = time.monotonic(), generation
            try:
                await read(ws, generation)
            finally:
                open_since.pop(slot, None)
                live.pop(slot, None)
        if generation.error:
            refused = generation.refused
            result.refused += refused
            result.failed += not refused
            result.note(generation.error)
            return not refused
        if generation.variants and generation.complete >= generation.variants:
            result.completed += 1
        else:
            result.silent += 1
            result.note(f"silent: close {ws.close_code}, {generation.complete} complete")
        return True

    async def read(ws: aiohttp.ClientWebSocketResponse, generation: Generation) -> None:
        async for message in ws:
            if message.type != aiohttp.WSMsgType.TEXT:
                continue
            now = time.monotonic()
            data: str = message.data
            counted = config.window_start <= now < config.window_end
            if counted:
                result.frames += 1
                result.frame_bytes += len(data)
            kind = frame_type(data)
            if kind == "setCode":
                out = result.latencies_us if counted else None
                if not generation.set_code(data, int(now * 1e6), config.epoch_us, out):
                    result.bad_frames += 1
            else:
                generation.other(kind, data)

    async def slot(index: int, session: aiohttp.ClientSession) -> None:
        begin = config.start_at + index * config.ramp_s / config.generations
        await asyncio.sleep(max(0.0, begin - time.monotonic()))
        while True:
            try:
                again = await one(index, session)
            except (aiohttp.ClientError, OSError) as exc:
                result.failed += 1
                result.note(repr(exc))
                again = False
            if not again:
                await asyncio.sleep(1.0)  # refused: retry in a moment, as asked

    async def lag_probe(period_s: float = 0.05) -> None:
        while True:
            before = time.monotonic()
            await asyncio.sleep(period_s)
            if config.window_start <= before < config.window_end:
                lag_ms = 1000 * (time.monotonic() - before - period_s)
                result.max_loop_lag_ms = max(result.max_loop_lag_ms, lag_ms)

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        tasks = [asyncio.create_task(slot(i, session)) for i in config.slots]
        tasks.append(asyncio.create_task(lag_probe()))
        await asyncio.sleep(max(0.0, config.window_end - time.monotonic()))
        end = time.monotonic()
        result.open = len(open_since)
        result.stalled = sum(end - opened > config.stall_s for opened in open_since.values())
        result.live_variants = sum(g.variants for g in live.values())
        for task in tasks:
            task.cancel()
        # Closing a socket cancels its generation (a non-resumable client, like upstream's UI).
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait(tasks, timeout=10)
    return result


def main() -> None:
    config = ClientConfig(**json.loads(sys.argv[1]))
    # uvloop, as the suite runs: the bench's own processes should cost the machine least.
    print(json.dumps(asdict(uvloop.run(run_client(config)))), flush=True)


if __name__ == "__main__":
    main()
