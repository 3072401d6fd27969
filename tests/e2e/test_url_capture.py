"""`POST /api/screenshot` as the upstream UI sends it, through the real three processes.

gateway → agent `CaptureUrl` → tool worker `CaptureUrl` → the worker's Chromium, behind its
egress guard. The page is served on loopback and reached through the guard's test
allowance (`S2C_TEST_EGRESS_ROUTES`: `page.test` → that port); every other loopback or
private target stays refused.
"""

from __future__ import annotations

import asyncio
import base64
import io
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web
from PIL import Image

from services.tools.settings import ToolsSettings
from tests.processes import Processes, running_processes
from tests.suite import running_suite

pytestmark = pytest.mark.asyncio(loop_scope="module")

HEADER_RGB = (200, 30, 60)
BODY_RGB = (240, 240, 240)
PAGE = f"""<!doctype html><html><head><title>Pricing</title><style>
  body {{ margin: 0; background: rgb{BODY_RGB}; }}
  header {{ height: 150px; background: rgb{HEADER_RGB}; }}
  main {{ height: 1800px; }}
</style></head><body><header></header><main>Plans</main></body></html>"""
# Long enough for a capture on a loaded 2-core CI machine; the hang test waits it out.
CAPTURE_TIMEOUT_S = 15


@dataclass
class Stack:
    processes: Processes
    page_port: int
    hung: asyncio.Event

    @property
    def screenshot_url(self) -> str:
        return f"http://127.0.0.1:{self.processes.gateway.port}/api/screenshot"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    hung = asyncio.Event()

    async def page(_: web.Request) -> web.Response:
        return web.Response(text=PAGE, content_type="text/html")

    async def hang(_: web.Request) -> web.Response:
        hung.set()
        await asyncio.Event().wait()  # never answers
        raise AssertionError("unreachable")

    app = web.Application()
    app.router.add_get("/", page)
    app.router.add_get("/hang", hang)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = runner.addresses[0][1]
    env = {
        "S2C_TEST_EGRESS_ROUTES": (
            f"page.test=127.0.0.1:{port},closed.test=127.0.0.1:{_free_port()}"
        ),
        "S2C_CAPTURE_TIMEOUT_S": str(CAPTURE_TIMEOUT_S),
    }
    try:
        async with running_processes(tmp_path_factory.mktemp("capture"), env) as processes:
            yield Stack(processes, port, hung)
    finally:
        await runner.cleanup()


async def _post(url: str, body: Any) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as session, session.post(url, json=body) as response:
        return response.status, await response.json()


def _decoded(data_url: str) -> Image.Image:
    prefix = "data:image/png;base64,"
    assert data_url.startswith(prefix)
    image = Image.open(io.BytesIO(base64.b64decode(data_url[len(prefix) :])))
    assert image.format == "PNG"
    return image.convert("RGB")


async def test_the_upstream_ui_gets_a_png_data_url_of_the_page(stack: Stack) -> None:
    # Word for word what upstream's UI posts: the URL as typed and its ScreenshotOne key.
    status, body = await _post(stack.screenshot_url, {"url": "http://page.test/", "apiKey": None})
    assert status == 200, body
    image = _decoded(body["url"])
    assert image.width == 1280
    assert image.height >= 150 + 1800  # the full page, not the 832-pixel viewport
    assert image.getpixel((640, 75)) == HEADER_RGB
    assert image.getpixel((640, 1200)) == BODY_RGB
    assert (body["width"], body["height"]) == image.size
    assert (body["mimeType"], body["truncated"], body["finalUrl"]) == (
        "image/png",
        False,
        "http://page.test/",
    )


async def test_mobile_is_a_phone_wide_capture(stack: Stack) -> None:
    status, body = await _post(
        stack.screenshot_url, {"url": "http://page.test/", "device": "mobile"}
    )
    assert status == 200, body
    image = _decoded(body["url"])
    assert image.width == 390
    assert image.getpixel((195, 75)) == HEADER_RGB


@pytest.mark.parametrize(
    ("typed", "why"),
    [
        ("127.0.0.1:{page}", "127.0.0.1 is a loopback address"),  # the page's own server
        ("http://localhost:{page}/", "localhost is a loopback name"),
        ("10.0.0.8/admin", "10.0.0.8 is a non-public address"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a non-public address"),
    ],
)
async def test_loopback_and_private_targets_are_refused_clearly(
    stack: Stack, typed: str, why: str
) -> None:
    status, body = await _post(stack.screenshot_url, {"url": typed.format(page=stack.page_port)})
    assert status == 422
    assert why in body["detail"]
    assert "Only public web pages can be captured" in body["detail"]


async def test_each_failure_has_its_status_and_message(stack: Stack) -> None:
    status, body = await _post(stack.screenshot_url, {"url": "http://"})
    assert (status, body) == (
        400,
        {"detail": "url must be an absolute http:// or https:// URL with a host"},
    )
    status, body = await _post(stack.screenshot_url, {"url": "ftp://page.test/"})
    assert (status, body) == (400, {"detail": "Unsupported protocol: ftp"})
    status, body = await _post(stack.screenshot_url, {"url": "http://closed.test/"})
    assert (status, body) == (
        502,
        {"detail": "Could not load http://closed.test/: the server could not be reached"},
    )
    status, body = await _post(stack.screenshot_url, {"url": "http://page.test/hang"})
    assert status == 504
    assert body == {
        "detail": f"Capturing http://page.test/hang timed out after {CAPTURE_TIMEOUT_S} s"
    }
    assert stack.hung.is_set()


async def test_workers_without_chromium_answer_503(tmp_path: Path) -> None:
    # A name that passes the address check, so what answers is the missing browser.
    tools = ToolsSettings(
        chromium_path=str(tmp_path / "no-chromium"),
        test_egress_routes={"page.test": ("127.0.0.1", 9)},
    )
    async with running_suite(tmp_path, tools=tools) as suite:
        status, body = await _post(f"{suite.http_url}/api/screenshot", {"url": "page.test"})
    assert status == 503
    assert body["detail"].startswith(
        "URL capture is unavailable: Chromium could not be launched on the tool worker"
    )
