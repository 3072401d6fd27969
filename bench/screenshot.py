"""screenshot_preview capture time: our Screenshotter against an upstream-style baseline.

The baseline does what upstream's PlaywrightBackend does: one shared Chromium, a new page
per capture, desktop then mobile one after the other, `networkidle`, `document.fonts.ready`,
a 250 ms settle. Ours renders both viewports at once in fresh contexts from a spare-page
pool, behind the egress guard. Same Chromium binary, same HTML, same run, both warm (the
browser is launched and one capture is thrown away before timing).

Run alone: .venv/bin/python bench/screenshot.py [--runs N] [--concurrent N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from playwright.async_api import Browser, async_playwright
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.tools.screenshot import (  # noqa: E402
    VIEWPORTS,
    Screenshotter,
    ScreenshotSettings,
)

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
            try:
                await page.set_content(html, wait_until="networkidle", timeout=15_000)
            except PlaywrightTimeoutError:
                pass
            await page.evaluate("document.fonts.ready.then(() => true)")
            await page.wait_for_timeout(250)
            shots.append(await page.screenshot(full_page=True, type="png"))
        finally:
            await page.close()
    return shots


async def timed(call: Callable[[], Awaitable[object]]) -> float:
    start = time.perf_counter()
    await call()
    return time.perf_counter() - start


async def sequential_ms(call: Callable[[], Awaitable[object]], runs: int) -> float:
    await call()  # warm-up, not timed
    return statistics.median([await timed(call) for _ in range(runs)]) * 1000


async def concurrent_ms(call: Callable[[], Awaitable[object]], n: int) -> float:
    async def burst() -> None:
        await asyncio.gather(*(call() for _ in range(n)))

    return await timed(burst) * 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="sequential captures per side")
    parser.add_argument("--concurrent", type=int, default=4, help="captures in one burst")
    parser.add_argument("--chromium", default=ScreenshotSettings().chromium_path)
    args = parser.parse_args()

    shooter = Screenshotter(ScreenshotSettings(chromium_path=args.chromium))
    async with async_playwright() as driver:
        browser = await driver.chromium.launch(
            executable_path=args.chromium,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic"],
        )
        try:

            async def ours() -> object:
                return await shooter.capture(PAGE)

            async def base() -> object:
                return await baseline_capture(browser, PAGE)

            await shooter.probe()
            rows = [
                (
                    "one capture (desktop+mobile), median",
                    await sequential_ms(base, args.runs),
                    await sequential_ms(ours, args.runs),
                ),
                (
                    f"{args.concurrent} captures at once, wall",
                    await concurrent_ms(base, args.concurrent),
                    await concurrent_ms(ours, args.concurrent),
                ),
            ]
        finally:
            await browser.close()
            await shooter.close()

    print(f"screenshot_preview, warm; {args.runs} sequential runs, burst of {args.concurrent}")
    print(f"{'case':<40} {'baseline ms':>12} {'ours ms':>10} {'speed-up':>9}")
    for name, base_ms, ours_ms in rows:
        print(f"{name:<40} {base_ms:>12.0f} {ours_ms:>10.0f} {base_ms / ours_ms:>8.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
