"""What axe-core's check costs per option (docs/accessibility.md): each HTML page of
evalsets/basic loaded at its width (offline, its CDN runtimes from vendor/), then checked
as the tool workers check a scored render. Wall time of the check, and the CPU it takes
in this process and Chromium's (every process descended from this one, read while the
page is still open so its renderer's time is counted).

    .venv/bin/python -m bench.accessibility [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import time
from pathlib import Path

from playwright.async_api import Route, async_playwright

from bench.procs import cpu_seconds
from services.common.vendor import DEFAULT_VENDOR_DIR, VendorCatalog
from services.common.vendor_route import route_offline
from services.eval.sets import load_set
from services.fidelity.accessibility import AxeScript, report_from_js

CHROMIUM = os.environ.get("S2C_CHROMIUM_PATH", "/usr/bin/chromium")


def tree_cpu() -> float:
    """CPU seconds of this process and all its descendants (Chromium's processes)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
    mine = {os.getpid()}
    while more := {pid for pid, parent in parents.items() if parent in mine} - mine:
        mine |= more
    total = 0.0
    for pid in mine:
        with contextlib.suppress(OSError):
            total += cpu_seconds(pid)
    return total


async def refuse(route: Route) -> None:
    await route.abort("blockedbyclient")


async def measure(runs: int) -> None:
    vendor = VendorCatalog.load(DEFAULT_VENDOR_DIR)
    axe = AxeScript(vendor)
    assert not axe.unavailable, axe.unavailable
    print(f"{'page':16} {'width':>5} {'wall s':>7} {'cpu s':>6}  score  violated rules")
    walls: list[float] = []
    cpus: list[float] = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        for ref in load_set("basic").items:
            if not ref.is_html:
                continue
            html = ref.path.read_text(encoding="utf-8")
            width, height = ref.viewport.width, min(ref.viewport.height, 1200)
            page_walls, page_cpus = [], []
            report = None
            for _ in range(runs):
                context = await browser.new_context(viewport={"width": width, "height": height})
                await route_offline(context, vendor, refuse)
                page = await context.new_page()
                await page.set_content(html, wait_until="load")
                start_wall, start_cpu = time.perf_counter(), tree_cpu()
                data = await page.evaluate(axe.expression)
                page_walls.append(time.perf_counter() - start_wall)
                page_cpus.append(tree_cpu() - start_cpu)
                report = report_from_js(data, width)
                await context.close()
            assert report is not None
            assert report.score is not None, report.unavailable_reason
            wall, cpu = statistics.median(page_walls), statistics.median(page_cpus)
            walls.append(wall)
            cpus.append(cpu)
            rules = ", ".join(f"{v.rule_id} ({v.node_count})" for v in report.violations)
            print(f"{ref.id:16} {width:5} {wall:7.2f} {cpu:6.2f}  {report.score:5.2f}  {rules}")
        await browser.close()
    print(
        f"axe-core per check, median: {statistics.median(walls):.2f} s wall, "
        f"{statistics.median(cpus):.2f} s CPU (at most {max(walls):.2f} s, {max(cpus):.2f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    asyncio.run(measure(parser.parse_args().runs))


if __name__ == "__main__":
    main()
