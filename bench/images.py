"""Images and URL captures against the real processes: memory and time (issue 24).

Starts the real tool worker, agent and gateway (`tests/processes.py`), with an Anthropic
and a Gemini key pointing at fake servers in this process, and a loopback site the
workers' browser reaches as `site.test`. Each row is one request; RSS is sampled every
10 ms from /proc while it runs:

1. **Agent images.** Peak RSS above the agent's idle level and RSS after (once the
   request ended and 1 s passed), against the baseline of the same run: a 640x480
   screenshot through the browser with 4 Claude variants. The issue's attacks (a 9000 px
   PNG through the browser, a 13000 px PNG over gRPC with 4 variants, JPEG, WebP and HEIC
   headers claiming gigapixels), the largest image the default budget decodes (an RGBA
   PNG wider than Anthropic's 7990 px, so it must be re-encoded, 4 variants), a 20-image
   prompt of such images, and a 30 MB video for Gemini.
2. **URL captures.** Time and the tool worker's extra RSS (its Chromium included) for a
   1280x2400 page (the baseline), a 1280x16000 page and a 30000x16000 one.
3. **Previews beside slow captures.** A demo generation's two `screenshot_preview`s
   alone, then while two captures of a page that never loads hold their slots.

Run: .venv/bin/python bench/images.py   (about 2 minutes on 2 cores)
"""

from __future__ import annotations

import asyncio
import base64
import functools
import io
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import aiohttp
import grpc
from PIL import Image

ROOT: Final = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: find tests/

from s2c.agent.v1 import agent_service_pb2 as pb  # noqa: E402
from s2c.agent.v1 import agent_service_pb2_grpc as pb_grpc  # noqa: E402

from tests.attacks import (  # noqa: E402
    Site,
    bombs,
    data_url,
    demo_previews,
    serving_site,
    solid_png,
)
from tests.fakes.anthropic_server import FakeAnthropic  # noqa: E402
from tests.fakes.anthropic_server import Text as ClaudeText  # noqa: E402
from tests.fakes.gemini_server import FakeGemini, Say  # noqa: E402
from tests.processes import Processes, running_processes  # noqa: E402
from tests.suite import create_params, run_ws  # noqa: E402

PAGE_SIZE: Final = os.sysconf("SC_PAGE_SIZE")
SAMPLE_S: Final = 0.01
SETTLE_S: Final = 1.0
GEMINI_MODEL: Final = "gemini-3-flash-preview (minimal thinking)"
CLAUDE_MODEL: Final = "claude-opus-4-8 (medium effort)"


# -- measuring ---------------------------------------------------------------------------


def tree_rss(root: int) -> int:
    """RSS of `root` and every process below it (a worker's Chromium)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            parent = int(stat[stat.rindex(")") + 2 :].split()[1])
            children.setdefault(parent, []).append(int(entry))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * PAGE_SIZE
        except OSError:
            pass
        todo += children.get(pid, [])
    return total


@dataclass
class Measured:
    name: str
    outcome: str
    seconds: float
    before: int  # RSS when it started
    peak: int  # above `before`
    after: int  # likewise, SETTLE_S after it ended


async def measure(
    name: str, pid: int, work: Callable[[], Awaitable[str]], *, settle: bool = True
) -> Measured:
    before = tree_rss(pid)
    peak = before
    done = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss(pid))
            await asyncio.sleep(SAMPLE_S)

    sampler = asyncio.create_task(sample())
    started = time.monotonic()
    try:
        outcome = await work()
    finally:
        seconds = time.monotonic() - started
        done.set()
        await sampler
    if settle:
        await asyncio.sleep(SETTLE_S)
    return Measured(name, outcome, seconds, before, peak - before, tree_rss(pid) - before)


def mb(count: int) -> str:
    return f"{count / 1e6:,.0f}"


def table(title: str, rows: Sequence[Measured], baseline: Measured, ratio: str = "") -> None:
    """`ratio` ("peak" or "s"): the column each row is compared on with the baseline row."""
    print(f"\n{title}")
    compared = f"{'x base ' + ratio:>12}" if ratio else ""
    print(
        f"{'request':<46} {'s':>6} {'before MB':>9} {'peak +MB':>8} {'after +MB':>9} "
        f"{'after %':>7} {compared}  outcome"
    )
    for row in rows:
        times = ""
        if ratio == "peak":
            times = f"{row.peak / baseline.peak:>12.2f}"
        elif ratio == "s":
            times = f"{row.seconds / baseline.seconds:>12.2f}"
        print(
            f"{row.name:<46} {row.seconds:>6.1f} {mb(row.before):>9} {mb(row.peak):>8} "
            f"{mb(row.after):>9} {100 * row.after / row.before:>+7.1f} {times}  {row.outcome}"
        )


# -- images ------------------------------------------------------------------------------


def encoded(image: Image.Image, fmt: str = "PNG", **options: Any) -> bytes:
    out = io.BytesIO()
    image.save(out, format=fmt, **options)
    return out.getvalue()


def gradient(width: int, height: int, mode: str) -> Image.Image:
    ramp = Image.linear_gradient("L").resize((width, height))
    bands = [ramp, ramp.transpose(Image.Transpose.FLIP_LEFT_RIGHT), ramp]
    if mode == "RGBA":
        bands.append(ramp.point(lambda v: 255 - v // 2))
    return Image.merge(mode, bands)


@dataclass
class Stack:
    processes: Processes
    anthropic: FakeAnthropic
    gemini: FakeGemini
    site: Site
    agent: pb_grpc.AgentServiceAsyncStub

    def script_turns(self) -> None:
        """A closing turn for up to 4 variants of each fake (the browser's default spread
        over both keys takes some of each; a leftover ends a later variant the same way)."""
        for _ in range(4):
            self.anthropic.add_turn(ClaudeText.of("Here is the page."))
            self.gemini.add_turn(Say("Here is the page."))


async def generate(stub: pb_grpc.AgentServiceAsyncStub, request: pb.GenerateCodeRequest) -> str:
    ends: list[str] = []
    try:
        async for message in stub.GenerateCode(request):
            for event in message.events:
                kind = event.WhichOneof("payload")
                if kind in ("variant_complete", "variant_error", "generation_error"):
                    ends.append(kind)
    except grpc.aio.AioRpcError as exc:
        return f"{exc.code().name}: {exc.details() or ''}"[:90]
    return ", ".join(f"{ends.count(k)} {k}" for k in sorted(set(ends)))


async def ws_outcome(stack: Stack, params: dict[str, Any]) -> str:
    result = await run_ws(stack.processes.ws_url, params)
    errors = result.of("error")
    if errors:
        return f"{result.close_code} {errors[0]['value']}"[:110]
    return f"{result.close_code}, {len(result.of('variantComplete'))} variantComplete"


def image_request(images: Sequence[str]) -> pb.GenerateCodeRequest:
    """4 Claude variants: Anthropic's is the path that decodes (to fit its limits)."""
    return pb.GenerateCodeRequest(
        generation_type=pb.GENERATION_TYPE_CREATE,
        input_mode=pb.INPUT_MODE_IMAGE,
        prompt=pb.Prompt(images=images),
        models=[CLAUDE_MODEL],
        variant_count=4,
    )


def sent_image_sizes(anthropic: FakeAnthropic, since: int) -> str:
    sizes = set()
    for request in anthropic.requests[since:]:
        for message in request.body.get("messages", []):
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "image" and block["source"].get("type") == "base64":
                    data = base64.b64decode(block["source"]["data"])
                    with Image.open(io.BytesIO(data)) as image:
                        sizes.add(f"{image.format} {image.width}x{image.height}")
    return ", ".join(sorted(sizes))


async def agent_rows(stack: Stack) -> tuple[Measured, list[Measured]]:
    pid = stack.processes.agent.process.pid
    stub = stack.agent
    small = data_url(encoded(gradient(640, 480, "RGB")), "image/png")

    async def browser(url: str) -> str:
        stack.script_turns()
        params = create_params(prompt={"text": "", "images": [url], "videos": []})
        return await ws_outcome(stack, params)

    await browser(small)  # warm-up: the first generation loads the SDK and its pools
    await asyncio.sleep(SETTLE_S)
    baseline = await measure("640x480 PNG, browser, 4 variants", pid, lambda: browser(small))
    rows = [baseline]
    huge = data_url(solid_png(9000, 9000), "image/png")
    rows.append(await measure("9000x9000 PNG, browser", pid, lambda: browser(huge)))
    huger = data_url(solid_png(13000, 13000), "image/png")
    rows.append(
        await measure(
            "13000x13000 PNG, gRPC, 4 variants",
            pid,
            lambda: generate(stub, image_request([huger])),
        )
    )
    for name, mime, data in bombs():
        request = image_request([data_url(data, mime)])
        rows.append(await measure(name, pid, functools.partial(generate, stub, request)))
    widest = data_url(encoded(gradient(8000, 2990, "RGBA")), "image/png")

    async def largest() -> str:
        stack.script_turns()
        since = len(stack.anthropic.requests)
        outcome = await generate(stub, image_request([widest]))
        return f"{outcome}; sent {sent_image_sizes(stack.anthropic, since)}"

    rows.append(await measure("8000x2990 RGBA PNG (24 MP), gRPC, 4 variants", pid, largest))
    # Twenty different images (one shared fitting each), all over 7990 px: every one is
    # decoded and re-encoded.
    tall = [data_url(encoded(gradient(1000 + n, 8000, "RGB")), "image/png") for n in range(20)]

    async def twenty() -> str:
        stack.script_turns()
        since = len(stack.anthropic.requests)
        outcome = await generate(stub, image_request(tall))
        sizes = sent_image_sizes(stack.anthropic, since).split(", ")
        return f"{outcome}; sent {len(sizes)} sizes, e.g. {sizes[0]}"

    rows.append(await measure("20 x 1000x8000 PNG, gRPC, 4 variants", pid, twenty))
    video = data_url(os.urandom(30 << 20), "video/mp4")

    async def gemini_video() -> str:
        stack.script_turns()
        request = pb.GenerateCodeRequest(
            generation_type=pb.GENERATION_TYPE_CREATE,
            input_mode=pb.INPUT_MODE_VIDEO,
            prompt=pb.Prompt(videos=[video]),
            models=[GEMINI_MODEL],
            variant_count=2,
        )
        return await generate(stub, request)

    rows.append(await measure("30 MB video, Gemini, gRPC, 2 variants", pid, gemini_video))
    return baseline, rows


# -- captures ----------------------------------------------------------------------------


async def capture(stack: Stack, url: str) -> tuple[int, dict[str, Any]]:
    endpoint = f"http://127.0.0.1:{stack.processes.gateway.port}/api/screenshot"
    async with aiohttp.ClientSession() as session, session.post(endpoint, json={"url": url}) as got:
        return got.status, await got.json()


async def capture_rows(stack: Stack) -> tuple[Measured, list[Measured]]:
    pid = stack.processes.tools.process.pid

    async def shot(width: int, height: int) -> str:
        status, body = await capture(stack, f"http://site.test/page?w={width}&h={height}")
        if status != 200:
            return f"{status} {body.get('detail', '')}"[:90]
        return f"200 {body['width']}x{body['height']} truncated={body['truncated']}"

    await shot(1280, 800)  # warm-up: Chromium launches on first use
    await asyncio.sleep(SETTLE_S)
    rows = []
    for width, height in ((1280, 2400), (1280, 16000), (30000, 16000)):
        work = functools.partial(shot, width, height)
        rows.append(await measure(f"{width}x{height} page", pid, work))
    return rows[0], rows


async def preview_rows(stack: Stack) -> tuple[Measured, list[Measured]]:
    pid = stack.processes.tools.process.pid
    stub = stack.agent

    runs = 0

    async def previews() -> str:
        nonlocal runs
        runs += 1
        results = [ok for _, ok in await demo_previews(stub, runs)]
        return f"{sum(results)} of {len(results)} screenshot_preview ok"

    await previews()  # warm: the spare pages of a fresh browser context are ready after it
    alone = await measure("demo generation, 2 previews", pid, previews)
    slow = [asyncio.create_task(capture(stack, "http://site.test/slow")) for _ in range(2)]
    await stack.site.two_slow.wait()
    beside = await measure("the same beside 2 slow captures", pid, previews, settle=False)
    running = sum(not task.done() for task in slow)
    stack.site.release.set()
    await asyncio.gather(*slow)
    beside.outcome += f"; {running} captures still running at the end"
    return alone, [alone, beside]


async def main() -> None:
    anthropic, gemini = FakeAnthropic(), FakeGemini()
    await anthropic.start()
    await gemini.start()
    try:
        async with serving_site() as site:
            env = {
                "ANTHROPIC_API_KEY": "sk-ant-bench",
                "ANTHROPIC_BASE_URL": anthropic.base_url,
                "GEMINI_API_KEY": "AIza-bench",
                "GEMINI_BASE_URL": gemini.base_url,
                "S2C_TEST_EGRESS_ROUTES": f"site.test=127.0.0.1:{site.port}",
                "S2C_CAPTURE_TIMEOUT_S": "120",
                "S2C_MAX_FRAME_BYTES": str(60 << 20),
            }
            with tempfile.TemporaryDirectory() as data:
                async with (
                    running_processes(Path(data), env) as processes,
                    grpc.aio.insecure_channel(
                        f"127.0.0.1:{processes.agent.port}",
                        options=[("grpc.max_send_message_length", 64 << 20)],
                    ) as channel,
                ):
                    stack = Stack(
                        processes, anthropic, gemini, site, pb_grpc.AgentServiceStub(channel)
                    )
                    await report(stack)
    finally:
        await anthropic.stop()
        await gemini.stop()


async def report(stack: Stack) -> None:
    baseline, rows = await agent_rows(stack)
    table("Agent: RSS above the level before each request", rows, baseline)
    baseline, rows = await capture_rows(stack)
    table("Tool worker (with its Chromium): /api/screenshot", rows, baseline, "peak")
    baseline, rows = await preview_rows(stack)
    table("Tool worker: previews beside slow captures", rows, baseline, "s")


if __name__ == "__main__":
    asyncio.run(main())
