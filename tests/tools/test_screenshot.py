"""screenshot_preview against the real Chromium (S2C_CHROMIUM_PATH, default /usr/bin/chromium).

One Screenshotter (one browser) is shared by the module; only the page-load test needs its
own settings. Name resolution is faked throughout: tests never touch real DNS.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
import pytest_asyncio
from PIL import Image

from services.common.babel_cdn import PINNED_BABEL_URL
from services.common.vendor import DEFAULT_VENDOR_DIR, VendorCatalog
from services.tools.preview_tool import RESULT_CONTENT, screenshot_preview_handler
from services.tools.screenshot import ScreenshotSettings, Screenshotter
from services.tools.types import FileState, ToolContext
from services.tools.viewports import Capture
from tests.offline_pages import REACT_PAGE, RED, tailwind_page

pytestmark = pytest.mark.asyncio(loop_scope="module")

CHROMIUM = os.environ.get("S2C_CHROMIUM_PATH", "/usr/bin/chromium")
HEADER_RGB = (200, 30, 60)
BODY_RGB = (240, 240, 240)

TALL_PAGE = f"""<!doctype html><html><head><style>
  body {{ margin: 0; background: rgb{BODY_RGB}; }}
  header {{ height: 120px; background: rgb{HEADER_RGB}; }}
  .tall {{ height: 2400px; }}
</style></head><body><header></header><div class="tall">content</div></body></html>"""


class FakeDNS:
    """Answers from a table; every other name fails, like an offline resolver.

    A test can wait for a name to be looked up: that is how it knows the browser's request
    reached the guard.
    """

    def __init__(self) -> None:
        self.table: dict[str, list[str]] = {}
        self.hang: set[str] = set()
        self.release = asyncio.Event()
        self._seen: dict[str, asyncio.Event] = {}

    def seen(self, host: str) -> asyncio.Event:
        return self._seen.setdefault(host, asyncio.Event())

    async def resolve(self, host: str, port: int) -> Sequence[str]:
        self.seen(host).set()
        if host in self.hang:
            await self.release.wait()
        if host not in self.table:
            raise OSError(f"offline: {host}")
        return self.table[host]


class ProxyLog:
    """Every request target that reached the egress proxy, with whether it was authorized."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, bool]] = []

    def observe(self, target: str, authorized: bool) -> None:
        self.requests.append((target, authorized))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def dns() -> FakeDNS:
    return FakeDNS()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shooter(dns: FakeDNS) -> AsyncIterator[Screenshotter]:
    shooter = Screenshotter(
        ScreenshotSettings(chromium_path=CHROMIUM),
        resolver=dns.resolve,
        vendor=VendorCatalog.load(DEFAULT_VENDOR_DIR),
    )
    assert await shooter.probe(), f"Chromium did not launch from {CHROMIUM}"
    await shooter.warm()
    yield shooter
    await shooter.close()


def _image(png: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG"
    return image.convert("RGB")


def _assert_tall_page(captures: list[Capture]) -> None:
    assert [(c.viewport.name, c.viewport.width, c.viewport.height) for c in captures] == [
        ("desktop", 1280, 832),
        ("mobile", 342, 684),
    ]
    for capture in captures:
        image = _image(capture.png)
        assert image.width == capture.viewport.width
        assert image.height >= 120 + 2400 > capture.viewport.height  # full page, not viewport
        assert image.getpixel((capture.viewport.width // 2, 60)) == HEADER_RGB
        assert image.getpixel((capture.viewport.width // 2, 1000)) == BODY_RGB


async def test_captures_full_page_desktop_and_mobile(shooter: Screenshotter) -> None:
    _assert_tall_page(await shooter.capture(TALL_PAGE))


async def test_tagged_widths_are_captured_whole_even_past_the_width_limit(
    shooter: Screenshotter,
) -> None:
    # The screenshots were taken 1920 and 390 px wide: the captures are too, though
    # the page-size limit is 1280 px.
    tool = screenshot_preview_handler(shooter)
    page = FileState("index.html", "<!DOCTYPE html><body><h1>Wide</h1></body>")
    outcome = await tool({}, page, ToolContext(viewport_widths=(1920, 390)))
    assert outcome.ok
    assert shooter.settings.max_width_px == 1280
    assert [_image(part.data or b"").width for part in outcome.media] == [1920, 390]
    assert "index.html at 1920 px, 390 px wide" in outcome.result["content"]


async def test_tool_outcome_shapes(shooter: Screenshotter) -> None:
    tool = screenshot_preview_handler(shooter)
    outcome = await tool({"ignored": True}, FileState("index.html", TALL_PAGE), ToolContext())

    assert outcome.ok
    assert outcome.updated_file is None
    names = ["preview_desktop.png", "preview_mobile.png"]
    assert [(p.display_name, p.mime_type, p.url) for p in outcome.media] == [
        (name, "image/png", None) for name in names
    ]
    pngs = [part.data for part in outcome.media]
    assert all(png is not None and _image(png).height > 684 for png in pngs)
    sizes = [len(png or b"") for png in pngs]

    assert outcome.result == {
        "content": RESULT_CONTENT,
        "details": {
            "screenshots": [
                {
                    "viewport": viewport,
                    "full_page": True,
                    "image_part_index": index,
                    "image_display_name": names[index],
                    "image_bytes": sizes[index],
                }
                for index, viewport in enumerate(["desktop", "mobile"])
            ]
        },
    }
    assert "data:" not in json.dumps(outcome.result)
    assert "http" not in json.dumps(outcome.result)

    prefix = "data:image/png;base64,"
    shots: list[dict[str, Any]] = outcome.summary["screenshots"]
    assert outcome.summary == {"screenshots": shots, "status": "ok"}
    assert [
        {key: value for key, value in shot.items() if key not in ("image_url", "status")}
        for shot in shots
    ] == outcome.result["details"]["screenshots"]
    assert [shot["status"] for shot in shots] == ["ok", "ok"]
    assert all(shot["image_url"].startswith(prefix) for shot in shots)
    assert [base64.b64decode(s["image_url"].removeprefix(prefix)) for s in shots] == pngs


async def test_no_file_is_an_error_without_a_browser() -> None:
    idle = Screenshotter(ScreenshotSettings(chromium_path="/nonexistent/chromium"))
    outcome = await screenshot_preview_handler(idle)({}, None, ToolContext())
    assert not outcome.ok
    assert outcome.result == {"error": "No file exists yet. Call create_file first."}
    assert outcome.summary == {"error": "No file to screenshot"}
    assert outcome.media == ()
    await idle.close()


async def test_capture_failure_is_a_tool_error() -> None:
    broken = Screenshotter(ScreenshotSettings(chromium_path="/nonexistent/chromium"))
    try:
        assert not await broken.probe()
        outcome = await screenshot_preview_handler(broken)(
            {}, FileState("index.html", TALL_PAGE), ToolContext()
        )
    finally:
        await broken.close()
    assert not outcome.ok
    assert outcome.result["error"].startswith("Screenshot failed: ")
    assert "/nonexistent/chromium" in outcome.result["error"]
    assert outcome.summary == {"error": "Screenshot failed"}
    assert outcome.media == ()


@pytest_asyncio.fixture(loop_scope="module")
async def listener() -> AsyncIterator[tuple[int, list[bytes]]]:
    """A loopback service the page must never reach; records every TCP connection."""
    connections: list[bytes] = []

    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(await reader.read(200))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nroot:x:0:0:")
        writer.close()

    server = await asyncio.start_server(record, "127.0.0.1", 0)
    async with server:
        yield server.sockets[0].getsockname()[1], connections


def _hostile_page(port: int, sentinel: str) -> str:
    local = f"http://127.0.0.1:{port}"
    worker_js = f"fetch('{local}/worker').catch(() => 0); new WebSocket('ws://127.0.0.1:{port}/w');"
    return f"""<!doctype html><html><head>
<script src="https://unpkg.com/@babel/standalone/babel.min.js"></script>
<link rel="stylesheet" href="{local}/style.css">
<link rel="prefetch" href="{local}/prefetch"><link rel="preconnect" href="{local}">
<style>body {{ background: url({local}/bg.png); }}</style>
</head><body>
<img src="{local}/x.png"><img src="file:///etc/passwd">
<iframe src="{local}/frame"></iframe>
<iframe src="file:///etc/passwd"></iframe>
<iframe src="http://169.254.169.254/latest/meta-data/"></iframe>
<iframe src="http://localhost:{port}/"></iframe>
<a id="ping" href="#" ping="{local}/ping">ping</a>
<pre id="out"></pre>
<script>
  const out = document.getElementById("out");
  const note = (label) => (body) => out.append(`${{label}}: ${{body}}\\n`);
  const read = (url) => fetch(url).then((r) => r.text());
  read("file:///etc/passwd").then(note("file"), note("file blocked"));
  read("{local}/fetch").then(note("local"), note("local blocked"));
  read("http://169.254.169.254/latest/meta-data/").then(note("meta"), note("meta blocked"));
  const xhr = new XMLHttpRequest(); xhr.open("GET", "{local}/xhr"); xhr.send();
  try {{ new WebSocket("ws://127.0.0.1:{port}/socket"); }} catch (e) {{}}
  try {{ new EventSource("{local}/events"); }} catch (e) {{}}
  new Worker(URL.createObjectURL(new Blob(["{worker_js}"])));
  document.getElementById("ping").click();
  navigator.sendBeacon("{local}/beacon", "x");
  // Last: a request that skips Playwright routing, so it can only be seen by the proxy.
  navigator.sendBeacon("http://{sentinel}/done", "x");
</script></body></html>"""


async def test_untrusted_page_cannot_reach_local_network_or_files(
    shooter: Screenshotter, dns: FakeDNS, listener: tuple[int, list[bytes]]
) -> None:
    port, connections = listener
    sentinel = f"sentinel-{port}.test"
    page = _hostile_page(port, sentinel)
    frames = await shooter.evaluate_frames(
        page,
        "[location.href, document.documentElement.innerText,"
        " Array.from(document.scripts, (s) => s.src).filter(Boolean)]",
    )
    # The proxy is the only way a beacon could have left; seeing it there means every
    # earlier beacon and ping went the same way.
    await asyncio.wait_for(dns.seen(sentinel).wait(), timeout=60)
    captures = await shooter.capture(page)
    assert [_image(c.png).width for c in captures] == [1280, 342]

    assert connections == []
    texts = [json.dumps(frame) for frame in frames]
    assert not any("root:" in text for text in texts)
    evaluated = [frame for frame in frames if isinstance(frame, list)]
    assert not any(str(url).startswith("file:") for url, _, _ in evaluated)
    main_url, main_text, main_scripts = evaluated[0]
    assert main_url.startswith("about:blank")
    assert "file blocked" in main_text
    assert "local blocked" in main_text
    assert "meta blocked" in main_text
    assert main_scripts == [PINNED_BABEL_URL]


async def test_hung_page_times_out_and_the_browser_stays_usable(shooter: Screenshotter) -> None:
    tool_error = None
    try:
        await shooter.capture("<p>spin</p><script>for (;;) {}</script>", timeout_s=1)
    except Exception as exc:
        tool_error = str(exc)
    assert tool_error == "capture timed out after 1s"
    _assert_tall_page(await shooter.capture(TALL_PAGE))


async def test_browser_is_relaunched_after_it_dies(shooter: Screenshotter) -> None:
    browser = await shooter._ready_browser()
    await browser.close()
    assert not browser.is_connected()
    _assert_tall_page(await shooter.capture(TALL_PAGE))


async def test_page_load_timeout_still_screenshots_what_rendered(dns: FakeDNS) -> None:
    dns.hang.add("slow.test")  # its image request stays pending: the page never goes idle
    slow = Screenshotter(
        ScreenshotSettings(chromium_path=CHROMIUM, page_load_timeout_s=1.0, settle_ms=0),
        resolver=dns.resolve,
    )
    try:
        captures = await slow.capture(TALL_PAGE + '<img src="http://slow.test/never.png">')
        assert dns.seen("slow.test").is_set()
        _assert_tall_page(captures)
    finally:
        dns.release.set()
        await slow.close()


async def test_a_stalled_screenshot_is_taken_again_in_a_new_page(
    dns: FakeDNS, caplog: pytest.LogCaptureFixture
) -> None:
    # No screenshot comes within a millisecond: each first attempt "stalls", as a page
    # whose frames stopped does, and the render is done again in a page of its own.
    stalling = Screenshotter(
        ScreenshotSettings(chromium_path=CHROMIUM, stall_s=0.001, settle_ms=0),
        resolver=dns.resolve,
    )
    try:
        captures = await stalling.capture(TALL_PAGE)
        png, height = await stalling.render_for_score(
            TALL_PAGE, 800, 600, "document.body.scrollHeight", timeout_s=30, keep_for="g/i"
        )
    finally:
        await stalling.close()

    _assert_tall_page(captures)
    assert _image(png).getpixel((400, 60)) == HEADER_RGB
    assert height == 120 + 2400
    stalls = [r.message for r in caplog.records if "stalled" in r.message]
    assert stalls == ["screenshot stalled; rendering again in a new page"] * 3


async def test_public_resources_load_through_the_authenticated_proxy(dns: FakeDNS) -> None:
    """Chromium gets through the proxy's 407 with the secret Playwright hands it."""
    heads: list[bytes] = []
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), HEADER_RGB).save(buffer, format="PNG")
    png = buffer.getvalue()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heads.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nConnection: close\r\n"
            + f"Content-Length: {len(png)}\r\n\r\n".encode()
            + png
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]

    async def internet(address: str, _: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        assert address == "93.184.216.34"
        return await asyncio.open_connection("127.0.0.1", port)

    dns.table["cdn.test"] = ["93.184.216.34"]
    log = ProxyLog()
    shooter = Screenshotter(
        ScreenshotSettings(chromium_path=CHROMIUM),
        resolver=dns.resolve,
        upstream_opener=internet,
        proxy_observer=log.observe,
    )
    page = (
        '<html><body style="margin:0;background:#fff">'
        '<img src="http://cdn.test/red.png" style="display:block;width:200px;height:200px">'
        "</body></html>"
    )
    try:
        async with server:
            captures = await shooter.capture(page)
    finally:
        await shooter.close()
    assert _image(captures[0].png).convert("RGB").getpixel((100, 100)) == HEADER_RGB
    assert ("http://cdn.test/red.png", True) in log.requests
    assert heads
    assert all(b"proxy-authorization" not in h.lower() for h in heads)


CDN_HOSTS = ("cdn.tailwindcss.com", "cdn.jsdelivr.net", "unpkg.com", "fonts.googleapis.com")


@pytest.mark.parametrize("page", ["tailwind", "react"])
async def test_cdn_pages_render_styled_from_the_local_copies(
    shooter: Screenshotter, dns: FakeDNS, page: str
) -> None:
    # The DNS here knows no public name: a CDN request that left would find nothing.
    html = tailwind_page() if page == "tailwind" else REACT_PAGE
    outcome = await screenshot_preview_handler(shooter)(
        {}, FileState("index.html", html), ToolContext()
    )
    assert outcome.ok, outcome.result
    for part in outcome.media:
        assert part.data is not None
        # Red across the top: Tailwind styled the body (or React mounted its red <main>).
        assert _image(part.data).getpixel((5, 5)) == RED
    assert not any(dns.seen(host).is_set() for host in CDN_HOSTS)
