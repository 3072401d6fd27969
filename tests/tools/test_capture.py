"""URL capture (`CaptureUrl`) against the real Chromium, pages served from loopback.

Pages reach the browser only through the guard's test allowance (`egress_routes`: a
`.test` name mapped to a loopback port), exactly as the worker process sets it up from
`S2C_TEST_EGRESS_ROUTES`. Without the allowance, loopback and private targets are refused.
Name resolution is faked throughout: tests never touch real DNS.
"""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace

import grpc
import pytest
import pytest_asyncio
from aiohttp import web
from PIL import Image
from s2c.tools.v1 import tool_service_pb2 as pb
from s2c.tools.v1 import tool_service_pb2_grpc as pb_grpc

from services.common.errors import bad_request_violations
from services.tools.capture import (
    CaptureError,
    CaptureErrorKind,
    CaptureRequest,
    CaptureSettings,
    UrlCapturer,
    validate_capture_url,
)
from services.tools.egress_routes import EgressTestRoutes, parse_routes
from services.tools.screenshot import ScreenshotSettings, Screenshotter
from services.tools.server import ToolsServer
from services.tools.settings import ToolsSettings

pytestmark = pytest.mark.asyncio(loop_scope="module")

CHROMIUM = os.environ.get("S2C_CHROMIUM_PATH", "/usr/bin/chromium")
HEADER_RGB = (200, 30, 60)
MOBILE_HEADER_RGB = (20, 90, 200)
BODY_RGB = (240, 240, 240)
TALL_PAGE = f"""<!doctype html><html><head><style>
  body {{ margin: 0; background: rgb{BODY_RGB}; }}
  header {{ height: 120px; background: rgb{HEADER_RGB}; }}
  @media (max-width: 500px) {{ header {{ background: rgb{MOBILE_HEADER_RGB}; }} }}
  .tall {{ height: 2400px; }}
</style></head><body><header></header><div class="tall">content</div>
<script>document.title = navigator.userAgent.includes("Mobile") ? "mobile" : "desktop";</script>
</body></html>"""
# Random pixels: a PNG of them is large, a JPEG much smaller.
NOISE_PAGE = """<!doctype html><html><body style="margin:0">
<canvas id="c" width="1280" height="300"></canvas><script>
const c = document.getElementById("c").getContext("2d"), img = c.createImageData(1280, 300);
let s = 7; for (let i = 0; i < img.data.length; i++) {
  s = (s * 1103515245 + 12345) & 0x7fffffff; img.data[i] = i % 4 === 3 ? 255 : (s >> 16) & 255; }
c.putImageData(img, 0, 0);</script></body></html>"""


class Site:
    """The pages the tests capture, on a loopback port; plus a loopback "secret" service
    that no capture may ever reach, which records every connection it gets."""

    def __init__(self) -> None:
        self.port = 0
        self.secret_port = 0
        self.secret_hits = 0
        self.hung = asyncio.Event()  # set once a request to /hang arrived

    async def tall(self, _: web.Request) -> web.Response:
        return web.Response(text=TALL_PAGE, content_type="text/html")

    async def noise(self, _: web.Request) -> web.Response:
        return web.Response(text=NOISE_PAGE, content_type="text/html")

    async def to_loopback(self, _: web.Request) -> web.Response:
        raise web.HTTPFound(f"http://127.0.0.1:{self.secret_port}/")

    async def hang(self, _: web.Request) -> web.Response:
        self.hung.set()
        await asyncio.Event().wait()  # never answers; cancelled when the server stops
        raise AssertionError("unreachable")

    async def secret(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.secret_hits += 1
        writer.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def site() -> AsyncIterator[Site]:
    site = Site()
    app = web.Application()
    app.router.add_get("/tall", site.tall)
    app.router.add_get("/noise", site.noise)
    app.router.add_get("/to-loopback", site.to_loopback)
    app.router.add_get("/hang", site.hang)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    site.port = runner.addresses[0][1]
    secret = await asyncio.start_server(site.secret, "127.0.0.1", 0)
    site.secret_port = secret.sockets[0].getsockname()[1]
    async with secret:
        yield site
    await runner.cleanup()


def _routes(site: Site) -> EgressTestRoutes:
    closed = _closed_port()
    return EgressTestRoutes(
        parse_routes(f"page.test=127.0.0.1:{site.port},closed.test=127.0.0.1:{closed}")
    )


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shooter(site: Site) -> AsyncIterator[Screenshotter]:
    """The worker's browser with the test allowance on."""
    routes = _routes(site)
    shooter = Screenshotter(
        ScreenshotSettings(chromium_path=CHROMIUM),
        resolver=routes.resolver,
        upstream_opener=routes.opener,
    )
    assert await shooter.probe(), f"Chromium did not launch from {CHROMIUM}"
    yield shooter
    await shooter.close()


async def _offline_dns(host: str, port: int) -> Sequence[str]:
    if host == "intranet.example":
        return ["10.1.2.3"]
    raise OSError(f"offline: {host}")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def guarded() -> AsyncIterator[UrlCapturer]:
    """A capturer without the allowance: production's rules, offline DNS."""
    shooter = Screenshotter(ScreenshotSettings(chromium_path=CHROMIUM), resolver=_offline_dns)
    yield UrlCapturer(shooter, CaptureSettings())
    await shooter.close()


def _image(data: bytes, fmt: str = "PNG") -> Image.Image:
    image = Image.open(io.BytesIO(data))
    assert image.format == fmt
    return image.convert("RGB")


async def _fails(capturer: UrlCapturer, url: str, kind: CaptureErrorKind) -> str:
    with pytest.raises(CaptureError) as caught:
        await capturer.capture(CaptureRequest(url))
    assert caught.value.kind is kind, caught.value.message
    return caught.value.message


async def test_a_page_is_captured_full_page_on_desktop(shooter: Screenshotter) -> None:
    result = await UrlCapturer(shooter, CaptureSettings()).capture(
        CaptureRequest("http://page.test/tall")
    )
    assert (result.mime_type, result.width, result.http_status) == ("image/png", 1280, 200)
    assert result.height >= 120 + 2400
    assert not result.truncated
    assert result.final_url == "http://page.test/tall"
    image = _image(result.image)
    assert image.size == (result.width, result.height)
    assert image.getpixel((640, 60)) == HEADER_RGB
    assert image.getpixel((640, 2000)) == BODY_RGB


async def test_mobile_gets_a_phone_viewport_and_user_agent(shooter: Screenshotter) -> None:
    capturer = UrlCapturer(shooter, CaptureSettings())
    result = await capturer.capture(CaptureRequest("http://page.test/tall", device="mobile"))
    assert result.width == 390
    assert result.height >= 120 + 2400
    assert _image(result.image).getpixel((195, 60)) == MOBILE_HEADER_RGB


async def test_a_tall_page_is_cut_off_at_the_maximum_height(shooter: Screenshotter) -> None:
    capturer = UrlCapturer(shooter, CaptureSettings(max_height_px=1000))
    result = await capturer.capture(CaptureRequest("http://page.test/tall"))
    assert result.truncated
    assert (result.width, result.height) == (1280, 1000)
    assert _image(result.image).size == (1280, 1000)


async def test_jpeg_on_request_and_as_the_fallback_for_a_png_over_the_limit(
    shooter: Screenshotter,
) -> None:
    roomy = UrlCapturer(shooter, CaptureSettings())
    png = await roomy.capture(CaptureRequest("http://page.test/noise", format="png"))
    jpeg = await roomy.capture(CaptureRequest("http://page.test/noise", format="jpeg"))
    assert jpeg.mime_type == "image/jpeg"
    assert _image(jpeg.image, "JPEG").width == 1280
    assert len(jpeg.image) < len(png.image)

    limit = (len(jpeg.image) + len(png.image)) // 2
    tight = UrlCapturer(shooter, CaptureSettings(max_bytes=limit))
    fallback = await tight.capture(CaptureRequest("http://page.test/noise"))
    assert fallback.mime_type == "image/jpeg"
    assert len(fallback.image) <= limit
    with pytest.raises(CaptureError) as caught:
        await tight.capture(CaptureRequest("http://page.test/noise", format="png"))
    assert caught.value.kind is CaptureErrorKind.TOO_LARGE
    assert f"over the limit of {limit} bytes" in caught.value.message


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:{secret}/", "127.0.0.1 is a loopback address"),
        ("http://[::1]:{secret}/", "::1 is a loopback address"),
        ("http://localhost:{secret}/", "localhost is a loopback name"),
        ("http://10.0.0.5/", "10.0.0.5 is a non-public address"),
        ("http://192.168.1.1/admin", "192.168.1.1 is a non-public address"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a non-public address"),
        ("http://intranet.example/", "intranet.example does not resolve to public"),
        ("http://page.test/tall", "page.test does not resolve to public"),  # allowance off
    ],
)
async def test_without_the_allowance_non_public_targets_are_refused(
    guarded: UrlCapturer, site: Site, url: str, why: str
) -> None:
    url = url.format(secret=site.secret_port)
    message = await _fails(guarded, url, CaptureErrorKind.REFUSED)
    assert message.startswith(f"Refusing to capture {url}: {why}")
    assert "Only public web pages can be captured" in message
    assert site.secret_hits == 0


async def test_the_allowance_admits_only_its_names(shooter: Screenshotter, site: Site) -> None:
    capturer = UrlCapturer(shooter, CaptureSettings())
    url = f"http://127.0.0.1:{site.port}/tall"  # the very server page.test maps to
    message = await _fails(capturer, url, CaptureErrorKind.REFUSED)
    assert "127.0.0.1 is a loopback address" in message


async def test_a_redirect_to_loopback_is_refused(shooter: Screenshotter, site: Site) -> None:
    capturer = UrlCapturer(shooter, CaptureSettings())
    message = await _fails(capturer, "http://page.test/to-loopback", CaptureErrorKind.REFUSED)
    assert "redirected to" in message
    assert f"127.0.0.1:{site.secret_port}" in message
    assert site.secret_hits == 0


async def test_an_unreachable_server_is_a_load_failure(shooter: Screenshotter) -> None:
    capturer = UrlCapturer(shooter, CaptureSettings())
    message = await _fails(capturer, "http://closed.test/", CaptureErrorKind.LOAD_FAILED)
    assert message == "Could not load http://closed.test/: the server could not be reached"


async def test_a_page_that_never_answers_times_out(shooter: Screenshotter, site: Site) -> None:
    # Long enough for a loaded machine's browser to ask for the page before it times out.
    capturer = UrlCapturer(shooter, CaptureSettings(timeout_s=6))
    message = await _fails(capturer, "http://page.test/hang", CaptureErrorKind.TIMEOUT)
    assert message == "Capturing http://page.test/hang timed out after 6 s"
    assert site.hung.is_set()  # the page was asked for and never answered


async def test_no_browser_is_unavailable_with_the_reason() -> None:
    off = UrlCapturer(None, CaptureSettings())
    assert "S2C_SCREENSHOTS=0" in await _fails(
        off, "https://example.com/", CaptureErrorKind.UNAVAILABLE
    )
    launches: list[BaseException | None] = []
    missing = Screenshotter(
        ScreenshotSettings(chromium_path="/nonexistent/chromium"),
        resolver=_public_dns,
        on_launch=launches.append,
    )
    try:
        broken = UrlCapturer(missing, CaptureSettings())
        # A refused address is refused without a browser: no launch to wait for.
        await _fails(broken, "http://127.0.0.1/", CaptureErrorKind.REFUSED)
        assert launches == []
        message = await _fails(broken, "https://example.com/", CaptureErrorKind.UNAVAILABLE)
        assert len(launches) == 1
    finally:
        await missing.close()
    assert "Chromium could not be launched" in message
    assert "S2C_CHROMIUM_PATH=/nonexistent/chromium" in message


async def _public_dns(host: str, port: int) -> Sequence[str]:
    return ["93.184.215.14"]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", "url is required"),
        ("   ", "url is required"),
        ("ftp://example.com/", "url must be an absolute http:// or https:// URL with a host"),
        ("file:///etc/passwd", "url must be an absolute http:// or https:// URL with a host"),
        ("example.com", "url must be an absolute http:// or https:// URL with a host"),
        ("http://", "url must be an absolute http:// or https:// URL with a host"),
        ("http://[::1", "url must be an absolute http:// or https:// URL with a host"),
        ("https://a.com/" + "x" * 2100, "url is 2114 characters; at most 2048"),
    ],
)
async def test_malformed_urls_are_invalid(url: str, message: str) -> None:
    with pytest.raises(CaptureError) as caught:
        validate_capture_url(url)
    assert caught.value.kind is CaptureErrorKind.INVALID
    assert caught.value.message == message


@pytest.mark.parametrize(
    "raw",
    ["page.test", "page.example=127.0.0.1:80", "page.test=10.0.0.1:80", "page.test=127.0.0.1:0"],
)
async def test_the_allowance_maps_only_test_names_to_loopback(raw: str) -> None:
    with pytest.raises(ValueError, match="S2C_TEST_EGRESS_ROUTES"):
        parse_routes(raw)


async def test_the_rpc_answers_each_failure_with_its_status(site: Site) -> None:
    settings = ToolsSettings(
        listen="127.0.0.1:0",
        chromium_path=CHROMIUM,
        test_egress_routes=parse_routes(f"page.test=127.0.0.1:{site.port}"),
    )
    server = ToolsServer(replace(settings, capture=CaptureSettings(timeout_s=20)))
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = pb_grpc.ToolServiceStub(channel)
            ok = await stub.CaptureUrl(
                pb.CaptureUrlRequest(url="http://page.test/tall", device=pb.CAPTURE_DEVICE_MOBILE)
            )
            assert (ok.mime_type, ok.width, ok.http_status) == ("image/png", 390, 200)
            assert _image(ok.image).getpixel((195, 60)) == MOBILE_HEADER_RGB

            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.CaptureUrl(pb.CaptureUrlRequest(url=f"http://127.0.0.1:{site.port}/"))
            assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
            assert "127.0.0.1 is a loopback address" in (refused.value.details() or "")

            with pytest.raises(grpc.aio.AioRpcError) as invalid:
                await stub.CaptureUrl(pb.CaptureUrlRequest(url="gopher://x"))
            assert invalid.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            [violation] = bad_request_violations(invalid.value)
            assert violation.field == "url"
            assert "absolute http:// or https://" in violation.description

            with pytest.raises(grpc.aio.AioRpcError) as late:
                await stub.CaptureUrl(pb.CaptureUrlRequest(url="http://page.test/hang"), timeout=1)
            assert late.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    finally:
        await server.stop()
