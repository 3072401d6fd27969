"""screenshot_preview capture time: our Screenshotter against an upstream-style baseline.

The baseline does what upstream's PlaywrightBackend does: one shared Chromium, a new page
per capture, desktop then mobile one after the other, `networkidle`, `document.fonts.ready`,
a 250 ms settle. Ours renders both viewports at once in fresh contexts from a spare-page
pool, behind the egress guard. Same Chromium binary, same HTML, same run, both warm (the
browser is launched and one capture is thrown away before timing).

Run alone: .venv/bin/python bench/screenshot.py [--runs N] [--burst N]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import time
from collections.abc import Awaitable, Callable

from playwright.async_api import Browser, async_playwright
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from services.tools.screenshot import ScreenshotSettings, Screenshotter
from services.tools.viewports import VIEWPORTS

# Upstream's launch (plus the flags this sandbox needs); no proxy, no routing.
BASELINE_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]

# Self-contained so that neither side measures this sandbox's failing DNS.
SECTIONS = "".join(
    f"""<section class="card"><h2>Feature {i}</h2>
    <p>Lorem ipsum dolor sit amet, consectetur adipiscing elit. Integer nec odio. Praesent
    libero. Sed cursus ante dapibus diam. Sed nisi. Nulla quis sem at nibh elementum.</p>
    <svg width="120" height="60"><rect width="120" height="60" rx="8" fill="#{i:02x}6699"/>
    </svg><button onclick="this.textContent='ok'">Try it</button></section>"""
    for i in range(24)
)
PAGE = f"""<!doctype html><html><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><style>
body{{margin:0;font-family:system-ui,sans-serif;background:#f5f5f7}}
header{{background:#1e40af;color:#fff;padding:32px;font-size:28px}}
main{{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:16px;padding:16px}}
.card{{background:#fff;border-radius:12px;padding:16px;box-shadow:0 1px 4px #0002}}
</style></head><body><header>Acme — a generated landing page</header><main>{SECTIONS}</main>
<script>document.querySelectorAll('h2').forEach((h, i) => h.dataset.n = i)</script>
</body></html>"""


async def baseline_capture(browser: Browser, html: str) -> list[bytes]:
    shots = []
    for viewport in VIEWPORTS:
        page = await browser.new_page(
            viewport={"width": viewport.width, "height": viewport.height}, device_scale_factor=1
        )
        try:
            with contextlib.suppress(PlaywrightTimeoutError):
                await page.set_content(html, wait_until="networkidle", timeout=15_000)
            await page.evaluate("document.fonts.ready.then(() => true)")
            await page.wait_for_timeout(250)
            shots.append(await page.screenshot(full_page=True, type="png"))
        finally:
            await page.close()
    return shots


Call = Callable[[], Awaitable[object]]


async def timed(call: Call) -> float:
    start = time.perf_counter()
    await call()
    return (time.perf_counter() - start) * 1000


async def one_by_one(call: Call, n: int) -> None:
    for _ in range(n):
        await call()


async def all_at_once(call: Call, n: int) -> None:
    await asyncio.gather(*(call() for _ in range(n)))


async def interleaved(base: Call, ours: Call, settle: Call, runs: int) -> tuple[float, float]:
    """Median ms of each side, alternating A/B so load from elsewhere hits both alike.

    `settle` (untimed) lets our background work (spare pages, context teardown) finish so
    it never runs inside the baseline's timing: a worker is idle between tool calls anyway.
    """
    base_ms, ours_ms = [], []
    for _ in range(runs):
        base_ms.append(await timed(base))
        ours_ms.append(await timed(ours))
        await settle()
    return statistics.median(base_ms), statistics.median(ours_ms)


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed repetitions per case")
    parser.add_argument("--burst", type=int, default=4, help="captures per burst")
    parser.add_argument("--chromium", default=ScreenshotSettings().chromium_path)
    args = parser.parse_args()
    n = args.burst

    # A generous limit: this measures speed, and a loaded machine must not turn it into errors.
    settings = ScreenshotSettings(chromium_path=args.chromium, capture_timeout_s=600)
    shooter = Screenshotter(settings)
    async with async_playwright() as driver:
        browser = await driver.chromium.launch(executable_path=args.chromium, args=BASELINE_ARGS)
        try:

            async def ours() -> object:
                return await shooter.capture(PAGE)

            async def base() -> object:
                return await baseline_capture(browser, PAGE)

            await base()  # warm both: launch, first renderer, caches
            await ours()
            await shooter.warm()
            load_before = os.getloadavg()[0]
            rows = [
                (
                    "1 capture (desktop+mobile)",
                    "",
                    *await interleaved(base, ours, shooter.warm, args.runs),
                ),
                (
                    f"{n} captures",
                    "baseline one by one, ours at once",
                    *await interleaved(
                        lambda: one_by_one(base, n),
                        lambda: all_at_once(ours, n),
                        shooter.warm,
                        args.runs,
                    ),
                ),
                (
                    f"{n} captures",
                    "both at once",
                    *await interleaved(
                        lambda: all_at_once(base, n),
                        lambda: all_at_once(ours, n),
                        shooter.warm,
                        args.runs,
                    ),
                ),
            ]
        finally:
            await browser.close()
            await shooter.close()

    load = f"load average {load_before:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    print(f"screenshot_preview capture, warm, median of {args.runs} interleaved runs ({load})")
    print(f"{'case':<28} {'how':<34} {'baseline ms':>11} {'ours ms':>8} {'speed-up':>8}")
    for case, how, base_ms, ours_ms in rows:
        ratio = base_ms / ours_ms
        print(f"{case:<28} {how:<34} {base_ms:>11.0f} {ours_ms:>8.0f} {ratio:>7.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
