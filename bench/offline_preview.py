"""First styled preview in the tool worker: local CDN copies against a CDN over the network.

`screenshot_preview` is the first time the tool worker renders a model's page. This times
one capture (desktop + mobile) of a Tailwind page (`<body class="bg-red-500">`) from the
call to the PNG, and checks whether the PNG is styled (red), in three set-ups of the same
`Screenshotter` (same Chromium, egress proxy, guard):

- local: the stacks' CDN URLs answered from the vendored copies (`vendor_route`);
- never answers: no copies, and the CDN host's connections go to a loopback server that
  accepts and never replies (a firewall dropping packets; the page as written, https);
- fast fake CDN: no copies, and the CDN host is a loopback HTTP server answering the same
  file at once (the page's URL as `http://`, so no TLS: a lower bound for a real CDN).

Each CDN host resolves to a stand-in public address through the guard's resolver seam and
its connections are redirected to loopback through the proxy's opener seam, so the request
takes the production path (routing, guard, proxy) and nothing leaves the machine.

    .venv/bin/python bench/offline_preview.py [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import statistics
import time
from collections.abc import Sequence

from aiohttp import web
from PIL import Image

from services.common.vendor import DEFAULT_VENDOR_DIR, VendorCatalog
from services.tools.screenshot import ScreenshotSettings, Screenshotter

STAND_IN = "93.184.216.7"  # a public address the guard accepts; never dialled
RED = (239, 68, 68)  # Tailwind 3's red-500: the body is styled
LINES = "".join(f'<p class="text-white px-8 py-1">Line {i}</p>' for i in range(30))
PAGE = f"""<!DOCTYPE html><html><head><meta charset="utf-8">
<script src="https://cdn.tailwindcss.com"></script></head>
<body class="bg-red-500"><h1 class="text-5xl font-bold text-white p-8">Styled?</h1>{LINES}
</body></html>"""


async def start_fake_cdn(body: bytes) -> tuple[web.AppRunner, int]:
    async def tailwind(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="text/javascript")

    app = web.Application()
    app.router.add_get("/{tail:.*}", tailwind)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, int(runner.addresses[0][1])


async def start_black_hole() -> tuple[asyncio.Server, list[asyncio.StreamWriter]]:
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)  # read nothing, answer nothing, close only at the end

    return await asyncio.start_server(hold, "127.0.0.1", 0), held


def styled(png: bytes) -> bool:
    return Image.open(io.BytesIO(png)).convert("RGB").getpixel((5, 5)) == RED


async def timed_capture(shooter: Screenshotter, html: str) -> tuple[float, bool]:
    started = time.perf_counter()
    captures = await shooter.capture(html)
    return (time.perf_counter() - started) * 1000, all(styled(c.png) for c in captures)


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="captures per set-up")
    parser.add_argument("--chromium", default=ScreenshotSettings().chromium_path)
    args = parser.parse_args()
    catalog = VendorCatalog.load(DEFAULT_VENDOR_DIR)
    tailwind_js = catalog.read("tailwindcss-cdn/tailwindcss.js").body
    cdn, cdn_port = await start_fake_cdn(tailwind_js)
    hole, held = await start_black_hole()
    hole_port = hole.sockets[0].getsockname()[1]

    async def resolve(host: str, port: int) -> Sequence[str]:
        if host.rstrip(".").lower() == "cdn.tailwindcss.com":
            return [STAND_IN]
        raise OSError(f"offline: {host}")

    async def open_connection(
        address: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        assert address == STAND_IN, address
        return await asyncio.open_connection("127.0.0.1", cdn_port if port == 80 else hole_port)

    settings = ScreenshotSettings(chromium_path=args.chromium, capture_timeout_s=600)
    local = Screenshotter(settings, vendor=catalog)
    network = Screenshotter(settings, resolver=resolve, upstream_opener=open_connection)
    http_page = PAGE.replace("https://cdn.tailwindcss.com", "http://cdn.tailwindcss.com")
    setups = (
        ("local copies", local, PAGE, args.runs),
        ("CDN never answers", network, PAGE, min(args.runs, 2)),  # each waits out the limit
        ("fast fake CDN (http)", network, http_page, args.runs),
    )
    try:
        for shooter in (local, network):
            await shooter.warm()
        await timed_capture(local, PAGE)  # first reads hash the files; Chromium warms up
        await timed_capture(network, http_page)
        load_before = os.getloadavg()[0]
        rows = []
        for name, shooter, html, runs in setups:
            results = []
            for _ in range(runs):
                results.append(await timed_capture(shooter, html))
                await shooter.warm()
            ms = statistics.median(r[0] for r in results)
            rows.append((name, ms, sum(r[1] for r in results), runs))
        load_after = os.getloadavg()[0]
    finally:
        for shooter in (local, network):
            await shooter.close()
        for writer in held:
            writer.close()
        hole.close()
        await cdn.cleanup()

    base = rows[0][1]
    print("screenshot_preview of a Tailwind page, median of each set-up's captures")
    print(f"{'set-up':<24}{'ms':>9}{'styled':>10}{'vs local':>10}")
    for name, ms, good, runs in rows:
        print(f"{name:<24}{ms:>9.0f}{f'{good}/{runs}':>10}{ms / base:>9.2f}x")
    print(f"load average {load_before:.2f} -> {load_after:.2f} (2 cores)")


if __name__ == "__main__":
    asyncio.run(main())
