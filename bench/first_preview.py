"""First-preview latency, end to end: model server → agent → gateway → browser.

Run alone: `.venv/bin/python bench/first_preview.py [--runs 20]`.

A local fake of the OpenAI Responses API streams a `create_file` call whose arguments
arrive in 8-character deltas; it stamps (CLOCK_MONOTONIC) the moment it writes the
first delta that carries content. The suite runs as real processes (tools, agent,
gateway) with that fake as its model server; a WebSocket client in this process stamps
the first `setCode` frame. All stamps share one machine clock. The table gives the
added latency per generation (after one warm-up generation), p50/p95/max, against the
50 ms target. The baseline, measured in the same run, is the latency of a plain text
delta streamed just before the tool call (`output_text.delta` → `assistant` frame):
the shortest path through the suite, so the ratio shows what the preview path adds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.openai_server import FunctionCall, Text, responses_turn  # noqa: E402
from tests.processes import running_processes  # noqa: E402
from tests.suite import create_params  # noqa: E402

PAGE = "<!DOCTYPE html><html><body>" + "<p>Hello, preview!</p>" * 400 + "</body></html>"
TARGET_MS = 50.0


class StampingFake:
    """Streams scripted Responses turns, one SSE record at a time, stamping content."""

    def __init__(self, pace_s: float) -> None:
        self.pace_s = pace_s
        self.first_content: list[float] = []
        self.first_text: list[float] = []
        self._runner: web.AppRunner | None = None

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/v1/responses", self._responses)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        return f"http://127.0.0.1:{self._runner.addresses[0][1]}/v1"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        continuation = any(i.get("type") == "function_call_output" for i in body["input"])
        if continuation:
            turn = responses_turn([Text(["Done."])])
        else:
            args = json.dumps({"path": "index.html", "content": PAGE})
            turn = responses_turn(
                [Text(["Building it."]), FunctionCall("c1", "create_file", args, len(args) // 8)]
            )
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        text_stamped = content_stamped = continuation
        for record in turn.frames:
            payload = record.split("data: ", 1)[1]
            event = json.loads(payload)
            kind = event.get("type")
            if not text_stamped and kind == "response.output_text.delta":
                self.first_text.append(time.monotonic())
                text_stamped = True
            if (
                not content_stamped
                and kind == "response.function_call_arguments.delta"
                and '"content"' in _args_so_far(turn.frames, record)
            ):
                self.first_content.append(time.monotonic())
                content_stamped = True
            await response.write(record.encode())
            if self.pace_s:
                await asyncio.sleep(self.pace_s)  # the model's pace, not a test wait
        await response.write_eof()
        return response


def _args_so_far(frames: tuple[str, ...], upto: str) -> str:
    text = ""
    for record in frames:
        event = json.loads(record.split("data: ", 1)[1])
        if event.get("type") == "response.function_call_arguments.delta":
            text += event["delta"]
        if record is upto:
            break
    return text


async def one_run(ws_url: str) -> tuple[float, float]:
    """Returns (first setCode, first assistant) receive stamps."""
    first_code = first_text = 0.0
    async with aiohttp.ClientSession() as session, session.ws_connect(ws_url) as ws:
        await ws.send_str(json.dumps(create_params(generationType="create")))
        async for message in ws:
            frame: dict[str, Any] = json.loads(message.data)
            now = time.monotonic()
            if frame["type"] == "assistant" and not first_text:
                first_text = now
            if frame["type"] == "setCode" and not first_code:
                first_code = now
    return first_code, first_text


async def main(runs: int, pace_ms: float) -> None:
    fake = StampingFake(pace_ms / 1000)
    base_url = await fake.start()
    env = {
        "OPENAI_API_KEY": "sk-bench",
        "OPENAI_BASE_URL": base_url,
        "S2C_MODELS": "gpt-5.5 (high effort)",
    }
    code_ms: list[float] = []
    text_ms: list[float] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            async with running_processes(Path(tmp), env) as suite:
                await one_run(suite.ws_url)  # warm-up: clients, connections, imports
                for _ in range(runs):
                    before_content = len(fake.first_content)
                    before_text = len(fake.first_text)
                    code_at, text_at = await one_run(suite.ws_url)
                    # Four variants stream at once; the browser's first frame answers the
                    # first model write.
                    code_ms.append((code_at - min(fake.first_content[before_content:])) * 1000)
                    text_ms.append((text_at - min(fake.first_text[before_text:])) * 1000)
    finally:
        await fake.stop()

    def row(name: str, values: list[float]) -> str:
        ordered = sorted(values)
        p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
        return f"{name:<36} {statistics.median(ordered):>8.1f} {p95:>8.1f} {max(ordered):>8.1f}"

    print(f"first preview latency over {runs} generations (4 variants each), ms")
    print(f"{'':<36} {'p50':>8} {'p95':>8} {'max':>8}")
    print(row("first content byte -> first setCode", code_ms))
    print(row("baseline: first text -> assistant", text_ms))
    verdict = "met" if max(code_ms) <= TARGET_MS else "NOT MET"
    print(f"target: every first preview within {TARGET_MS:.0f} ms: {verdict}")
    print(f"ratio p50 preview/text: {statistics.median(code_ms) / statistics.median(text_ms):.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--pace-ms", type=float, default=2.0, help="delay between SSE records")
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.pace_ms))
