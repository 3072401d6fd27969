"""What an update's change check costs (docs/fidelity.md, "Updates keep what was not asked
for"): CPU (this process and every process under it: Playwright's driver, Chromium) and
wall time of ChangeChecker.compare on `evalsets/basic`'s landing page at 1280 px, its
heading the selected element.

- the first option's check: both pages rendered (the previous page's render is then kept);
- every later option's check of the same update: only the new page rendered;
- the comparison itself (cells, boxes, text), without the renders.

Run alone: PYTHONPATH=gen/python:. .venv/bin/python bench/change_check.py [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench.score_cost import CHROMIUM, tree_cpu_s
from services.common.tool_types import FileState
from services.eval.sets import load_set
from services.fidelity.changes import Box, Render, unrequested_changes
from services.fidelity.stop import Stop
from services.tools.changes import ChangeChecker
from services.tools.screenshot import ScreenshotSettings, Screenshotter

HEADING = "<h1>Dinner, planned for the whole week</h1>"


async def measured(run: Callable[[], Awaitable[Any]]) -> tuple[float, float, Any]:
    cpu, wall = tree_cpu_s(), time.monotonic()
    out = await run()
    return tree_cpu_s() - cpu, time.monotonic() - wall, out


async def main(runs: int) -> None:
    html = next(r for r in load_set("basic").items if r.id == "landing").path.read_text()
    assert HEADING in html
    shooter = Screenshotter(ScreenshotSettings(chromium_path=CHROMIUM))
    rows: dict[str, list[tuple[float, float]]] = {"first": [], "later": [], "diff": []}
    found: dict[str, Any] = {}
    try:
        await shooter.render_for_score(html, 1280, 800, "() => 0", timeout_s=30)  # warm
        for n in range(runs):
            # A new previous page each run, so the first check renders it again.
            before = FileState("index.html", html.replace("</body>", f"<!-- {n} --></body>"))
            heading = HEADING.replace("week", "month")
            after = FileState("index.html", before.content.replace(HEADING, heading))
            other = FileState("index.html", after.content.replace("Pricing", "Prices"))
            checker = ChangeChecker(shooter)

            def check(
                page: FileState, checker: ChangeChecker = checker, before: FileState = before
            ) -> Callable[[], Awaitable[Any]]:
                return lambda: checker.compare(
                    before, page, (), (), widths=(1280,), selected=HEADING, timeout_s=30
                )

            cpu, wall, first = await measured(check(after))
            rows["first"].append((cpu, wall))
            cpu, wall, later = await measured(check(other))
            rows["later"].append((cpu, wall))
            found["first"] = [c.box for c in first[0].changes]
            found["later"] = [(c.box, c.before_text, c.after_text) for c in later[0].changes]
            png_a, _ = await shooter.render_for_score(
                before.content, 1280, 800, "() => 0", timeout_s=30
            )
            png_b, _ = await shooter.render_for_score(
                other.content, 1280, 800, "() => 0", timeout_s=30
            )
            box = Box(0, 0, 10, 10)

            async def diff(a: bytes = png_a, b: bytes = png_b, box: Box = box) -> Any:
                return unrequested_changes(Render(a, (), box), Render(b, (), box), Stop())

            cpu, wall, _ = await measured(diff)
            rows["diff"].append((cpu, wall))
    finally:
        await shooter.close()
    print("reported:", found)
    print("| check | CPU s | wall s |\n|---|---|---|")
    for name, values in rows.items():
        cpu = statistics.median(v[0] for v in values)
        wall = statistics.median(v[1] for v in values)
        print(f"| {name} | {cpu:.2f} | {wall:.2f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    asyncio.run(main(parser.parse_args().runs))
