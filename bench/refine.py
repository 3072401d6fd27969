"""What a refinement round costs (issue 37): CPU and wall time per round, and the input
tokens of a refined create against an unrefined one.

The whole suite runs (agent, a real tool worker with Chromium and Tesseract), with a fake
Anthropic server that emulates the prompt cache (tests/fakes/prompt_cache.py: tokens as
characters / 4, an image 1,000 tokens). The screenshot is the bakery page of
tests/e2e/test_refine.py; the model first writes it with a wrong heading, red text, a navy
background and three blocks missing, then (refined) fixes what the refine turn names with
four edit_file calls. Each case runs `--runs` times with a new screenshot (so no score is
cached from an earlier run); the table gives medians.

- CPU: this process (agent and tool worker run in it), Tesseract and the browser.
- "per round": the refined create's CPU and wall time less the unrefined one's (both ask
  for the scores the client shows, as the built-in UI does).
- Tokens: input tokens sent over the variant's requests (cached included), cache reads,
  and billed-equivalent input (reads at 0.1x, writes at 1.25x, Anthropic's prices).

Run alone: PYTHONPATH=gen/python:. .venv/bin/python bench/refine.py [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PIL import Image
from s2c.common.v1 import common_pb2

from bench.score_cost import tree_cpu_s
from services.agent.settings import AgentSettings
from services.tools.settings import ToolsSettings
from tests.e2e.test_refine import FIXES, RIGHT, WRONG, edits, image_create
from tests.fakes import anthropic_server as ant
from tests.suite import Suite, generation_events, running_suite

CHROMIUM = "/usr/bin/chromium"
MODEL = "claude-opus-4-8 (medium effort)"


@dataclass
class Run:
    cpu_s: float
    wall_s: float
    uncached: int  # input tokens neither read from nor written to the cache
    read: int
    written: int

    @property
    def sent(self) -> int:
        return self.uncached + self.read + self.written

    @property
    def billed(self) -> float:
        return self.uncached + 0.1 * self.read + 1.25 * self.written


async def screenshot(suite: Suite, n: int) -> str:
    worker = suite.tools.worker.screenshotter
    assert worker is not None
    png, _ = await worker.render_for_score(RIGHT, 1000, 700, "() => 0", timeout_s=30)
    # A pixel changed per run: another screenshot, read by OCR again, as a new request's.
    image = Image.open(io.BytesIO(png)).convert("RGB")
    image.putpixel((999, 699), (n % 256, 0, 0))
    out = io.BytesIO()
    image.save(out, "PNG")
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode("ascii")


async def one(suite: Suite, n: int, refine: bool) -> Run:
    # A fake of its own: its cache starts cold, as a new screenshot's requests would (the
    # fake counts an image by size, not content, so a shared one would hit across runs).
    fake = ant.FakeAnthropic(emulate_cache=True)
    await fake.start()
    try:
        return await _one(suite, fake, n, refine)
    finally:
        await fake.stop()


async def _one(suite: Suite, fake: ant.FakeAnthropic, n: int, refine: bool) -> Run:
    page = {"path": "index.html", "content": WRONG}
    fake.add_turn(ant.ToolUse.of("toolu_0", "create_file", page, size=400))
    fake.add_turn(ant.Text.of("Built it."))
    if refine:
        calls = [ant.ToolUse.of(f"toolu_{i}", "edit_file", e) for i, e in enumerate(edits(FIXES))]
        fake.add_turn(*calls)
        fake.add_turn(ant.Text.of("Fixed."))
    request = image_create(MODEL, await screenshot(suite, n), rounds=1 if refine else 0)
    request.credentials.providers["anthropic"].CopyFrom(
        common_pb2.ProviderCredentials(api_key="sk-ant-bench", base_url=fake.base_url)
    )
    start_cpu, start = tree_cpu_s(), time.monotonic()
    events = await generation_events(suite.agent.port, request)
    wall, cpu = time.monotonic() - start, tree_cpu_s() - start_cpu
    usages = [e.usage for e in events if e.HasField("usage")]
    codes = [e.code_snapshot.content for e in events if e.HasField("code_snapshot")]
    assert codes[-1] == (RIGHT if refine else WRONG), "the scripted fix did not land"
    return Run(
        cpu,
        wall,
        sum(u.input_tokens for u in usages),
        sum(u.cache_read_tokens for u in usages),
        sum(u.cache_write_tokens for u in usages),
    )


async def main(runs: int) -> None:
    agent = AgentSettings(provider_max_retries=0, preview_replay_s=0.0)
    tools = ToolsSettings(screenshots_enabled=True, chromium_path=CHROMIUM)
    with tempfile.TemporaryDirectory() as data:
        async with running_suite(Path(data), agent=agent, tools=tools) as suite:
            await one(suite, 0, False)  # warm: the browser's first page
            plain = [await one(suite, 1 + 2 * n, False) for n in range(runs)]
            refined = [await one(suite, 2 + 2 * n, True) for n in range(runs)]

    def med(rs: list[Run], key: str) -> float:
        return float(statistics.median(float(getattr(r, key)) for r in rs))

    print(
        f"{'create of one option':34} {'cpu s':>6} {'wall s':>7} {'sent':>6} {'read':>6} "
        f"{'billed':>7}"
    )
    for name, rs in (("unrefined (scored once)", plain), ("refined, 1 round", refined)):
        print(
            f"{name:34} {med(rs, 'cpu_s'):6.2f} {med(rs, 'wall_s'):7.2f} {med(rs, 'sent'):6.0f} "
            f"{med(rs, 'read'):6.0f} {med(rs, 'billed'):7.0f}"
        )
    print(
        f"{'per round (difference)':34} {med(refined, 'cpu_s') - med(plain, 'cpu_s'):6.2f} "
        f"{med(refined, 'wall_s') - med(plain, 'wall_s'):7.2f}"
    )
    print(
        f"refined / unrefined input tokens: sent {med(refined, 'sent') / med(plain, 'sent'):.2f}x, "
        f"billed {med(refined, 'billed') / med(plain, 'billed'):.2f}x"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    asyncio.run(main(parser.parse_args().runs))
