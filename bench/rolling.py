"""A gateway restart and a gateway crash under running generations: how long the drain
takes, how long a browser is without its stream, and what is lost (issue 38).

Real processes (a tool worker, two agents, two gateways; the demo model paced so a
generation runs a few seconds), browsers of both protocols on gateway 0, which is then
sent SIGTERM (a rolling update's step); then resumable browsers on the survivor, which is
SIGKILLed (a crash) and replaced. Prints one table row per step:

- drain s: SIGTERM to the process's exit (0 for a crash);
- resume s: per resumable browser, its socket's close to the first frame of its re-attach
  through the other gateway (median / max);
- lost: generations that did not end with 1000 and every variant complete; 1006: closes
  without a close frame.

Run from another checkout to measure it (`cd /work/main && python /path/bench/rolling.py`):
the services run from the current directory, the browsers from this file's.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.e2e.test_rolling import Browser, Fleet, fleet, wave

NO_CLOSE_FRAME = 1006


@dataclass
class Step:
    name: str
    drain_s: float
    resumes_s: list[float]
    browsers: list[Browser]

    def row(self) -> str:
        lost = sum(
            1 for b in self.browsers if b.closes[-1] != 1000 or b.completed_variants() != {0, 1}
        )
        dropped = sum(b.closes.count(NO_CLOSE_FRAME) for b in self.browsers)
        resumes = (
            f"{statistics.median(self.resumes_s):6.3f} / {max(self.resumes_s):6.3f}"
            if self.resumes_s
            else "     -"
        )
        return (
            f"| {self.name:<26} | {self.drain_s:7.3f} | {resumes:>15} | "
            f"{lost:>2} of {len(self.browsers):<2} | {dropped:>4} |"
        )


async def restart_step(f: Fleet, resumable: int, upstream: int) -> Step:
    plan = [(0, True)] * resumable + [(0, False)] * upstream
    browsers, tasks = await wave(f, plan)
    watch = asyncio.ensure_future(_watch_resumes(browsers))
    started = time.monotonic()
    gateway = f.live.pop(0)
    gateway.process.send_signal(signal.SIGTERM)
    await gateway.process.wait()
    drain_s = time.monotonic() - started
    await asyncio.gather(*tasks)
    return Step(f"SIGTERM ({resumable} res + {upstream} up)", drain_s, await watch, browsers)


async def crash_step(f: Fleet, resumable: int) -> Step:
    browsers, tasks = await wave(f, [(0, True)] * resumable, until="started")
    watch = asyncio.ensure_future(_watch_resumes(browsers))
    f.live.pop(0).process.kill()
    await asyncio.gather(*tasks)
    return Step(f"SIGKILL ({resumable} res)", 0.0, await watch, browsers)


async def _watch_resumes(browsers: list[Browser]) -> list[float]:
    """Each resumable browser's gap: its first socket's close to the first frame of the
    socket it re-attached with."""
    gaps: list[float] = []

    async def one(b: Browser) -> None:
        version, closes = b.version, len(b.closes)
        while len(b.closes) == closes and not b.done:
            version = await b.changed(version)
        closed, frames = time.monotonic(), len(b.frames)
        while len(b.frames) == frames and not b.done:
            version = await b.changed(version)
        if len(b.frames) > frames:
            gaps.append(time.monotonic() - closed)

    await asyncio.gather(*(one(b) for b in browsers if b.resumable))
    return gaps


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resumable", type=int, default=4)
    parser.add_argument("--upstream", type=int, default=2)
    # 10: a generation takes about 3 s; 60 (the demo's default) about 20 s, longer than
    # the 10 s an aiohttp runner waits for its handlers on shutdown.
    parser.add_argument("--pace-ms", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        async with fleet(Path(tmp), tools=1, agents=2, pace_ms=args.pace_ms) as f:
            f.live.append(await f.start_gateway())  # a third: the crash needs a survivor
            steps = [await restart_step(f, args.resumable, args.upstream)]
            steps.append(await crash_step(f, args.resumable))
    print("| step                       | drain s | resume s med/max | lost    | 1006 |")
    print("|---|---|---|---|---|")
    for step in steps:
        print(step.row())


if __name__ == "__main__":
    asyncio.run(main())
