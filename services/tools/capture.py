"""URL capture: a full-page image of a public web page, for the gateway's `/api/screenshot`.

Not a model tool (`CaptureUrl` is its own RPC, so no model can ask for it). It borrows the
worker's one Chromium from the `Screenshotter`: each capture gets a fresh context (no
cookies or storage shared with a preview or another capture) behind the same request
routing and egress proxy, so every request the page makes, redirects included, can only
reach public addresses. The target itself is vetted first, before Chromium is even
launched (a refusal needs no browser), which is what gives a refused address its clear
message; the final URL is vetted again because a plain-HTTP redirect to a refused address
ends on the proxy's 403 page rather than in a navigation error.

Bounded four ways: one deadline for the whole capture (waiting for one of the captures'
own slots included: previews have slots of their own, so a slow page never delays one),
a maximum width and height (a larger page is clipped to them: Chromium then renders only
the clip, where a 30000 px wide page used to cost gigabytes), and a maximum image size.
The image's size is read from its header, never by decoding it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import re
from dataclasses import dataclass
from enum import Enum
from typing import Literal

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import FloatRect, Page, Response
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from services.common.images import ImageRefused, read_header
from services.common.netguard import network_target
from services.common.tool_types import CapturedImage
from services.tools.egress_proxy import EGRESS_HEADER
from services.tools.screenshot import Screenshotter
from services.tools.viewports import DESKTOP, Viewport, page_clip

log = logging.getLogger(__name__)

MAX_URL_CHARS = 2048
MOBILE_CAPTURE = Viewport("mobile", 390, 844)
# A phone's Chrome, so sites that pick their layout by user agent serve the mobile one.
MOBILE_USER_AGENT = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 "
    "(KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36"
)
_NET_ERROR = re.compile(r"net::ERR_[A-Z_]+")
_NETWORK_IDLE_S = 2.0  # past "load", how long late requests may still change the page
Device = Literal["desktop", "mobile"]
Format = Literal["auto", "png", "jpeg"]


@dataclass(frozen=True, slots=True)
class CaptureSettings:
    # The whole capture, from the request to the encoded image.
    timeout_s: float = 30.0
    # Within the deadline: how long to wait for the page's load event before capturing
    # what has rendered (a page whose scripts never finish is still worth an image).
    load_timeout_s: float = 15.0
    # Pages taller or wider than this are cut off here (CSS pixels = image pixels).
    max_height_px: int = 16384
    max_width_px: int = 1280
    # The largest encoded image returned.
    max_bytes: int = 10 * 1024 * 1024
    # Captures one worker runs at once, in slots of their own (previews have theirs);
    # more wait, inside their deadline.
    concurrency: int = 2
    jpeg_quality: int = 80
    settle_ms: int = 250


@dataclass(frozen=True, slots=True)
class CaptureRequest:
    url: str
    device: Device = "desktop"
    format: Format = "auto"


class CaptureErrorKind(Enum):
    INVALID = "invalid"  # the request: a malformed URL
    REFUSED = "refused"  # the egress guard: not a public address
    TIMEOUT = "timeout"
    TOO_LARGE = "too_large"
    LOAD_FAILED = "load_failed"  # the page: connection refused, TLS error, …
    UNAVAILABLE = "unavailable"  # this worker: no browser


class CaptureError(Exception):
    def __init__(self, kind: CaptureErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def validate_capture_url(url: str) -> str:
    """The absolute http(s) URL to capture, or CaptureError(INVALID) saying what is wrong."""
    url = url.strip()
    if not url:
        raise CaptureError(CaptureErrorKind.INVALID, "url is required")
    if len(url) > MAX_URL_CHARS:
        raise CaptureError(
            CaptureErrorKind.INVALID, f"url is {len(url)} characters; at most {MAX_URL_CHARS}"
        )
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme not in ("http", "https") or network_target(url) is None:
        raise CaptureError(
            CaptureErrorKind.INVALID, "url must be an absolute http:// or https:// URL with a host"
        )
    return url


def refusal_message(url: str, host: str) -> str:
    bare = host.strip("[]")
    try:
        kind = "a loopback" if ipaddress.ip_address(bare).is_loopback else "a non-public"
        why = f"{bare} is {kind} address"
    except ValueError:
        if bare == "localhost" or bare.endswith(".localhost"):
            why = f"{bare} is a loopback name"
        else:
            why = f"{bare} does not resolve to public internet addresses only"
    return (
        f"Refusing to capture {url}: {why}. Only public web pages can be captured; "
        "loopback, private, link-local and unresolvable addresses are refused."
    )


class UrlCapturer:
    """Captures URLs with the worker's browser; `shooter` is None when screenshots are off."""

    def __init__(self, shooter: Screenshotter | None, settings: CaptureSettings) -> None:
        self._shooter = shooter
        self.settings = settings
        self._slots = asyncio.Semaphore(max(1, settings.concurrency))

    async def capture(
        self, request: CaptureRequest, *, timeout_s: float | None = None
    ) -> CapturedImage:
        """`timeout_s` can only shorten the configured deadline (the caller's gRPC deadline)."""
        url = validate_capture_url(request.url)
        shooter = self._enabled_shooter()
        target = network_target(url)
        assert target is not None  # validate_capture_url checked it
        # Vetted before Chromium's first launch: a refusal needs no browser, and must not
        # wait seconds for one to start on a loaded worker.
        if not await shooter.guard.vet(*target):
            raise CaptureError(CaptureErrorKind.REFUSED, refusal_message(url, target[0]))
        if not await shooter.probe():
            raise CaptureError(
                CaptureErrorKind.UNAVAILABLE,
                "URL capture is unavailable: Chromium could not be launched on the tool "
                f"worker (S2C_CHROMIUM_PATH={shooter.settings.chromium_path})",
            )
        limit_s = self.settings.timeout_s
        if timeout_s is not None:
            limit_s = min(limit_s, timeout_s)
        try:
            async with asyncio.timeout(limit_s):
                return await self._capture(shooter, url, request)
        except TimeoutError:
            raise CaptureError(
                CaptureErrorKind.TIMEOUT, f"Capturing {url} timed out after {limit_s:g} s"
            ) from None

    def _enabled_shooter(self) -> Screenshotter:
        if self._shooter is None:
            raise CaptureError(
                CaptureErrorKind.UNAVAILABLE,
                "URL capture is unavailable: screenshots are turned off on the tool workers "
                "(S2C_SCREENSHOTS=0)",
            )
        return self._shooter

    async def _capture(
        self, shooter: Screenshotter, url: str, request: CaptureRequest
    ) -> CapturedImage:
        mobile = request.device == "mobile"
        viewport = MOBILE_CAPTURE if mobile else DESKTOP
        user_agent = MOBILE_USER_AGENT if mobile else None
        # Not Chromium's is_mobile: it lays a page without a viewport meta tag out 980 px
        # wide, and the image would no longer be the phone's width.
        async with (
            self._slots,
            shooter.fresh_page(viewport, touch=mobile, user_agent=user_agent) as page,
        ):
            status = await self._load(page, url)
            final_url = page.url
            final = network_target(final_url)
            if final is not None and not await shooter.guard.vet(*final):
                raise CaptureError(
                    CaptureErrorKind.REFUSED,
                    f"{url} redirected to {final_url}, which is refused: "
                    + refusal_message(final_url, final[0]),
                )
            clip = await page_clip(page, self.settings.max_width_px, self.settings.max_height_px)
            image, mime = await self._encode(page, request.format, clip)
        try:
            header = read_header(image)
        except ImageRefused:
            raise CaptureError(
                CaptureErrorKind.LOAD_FAILED, f"Capturing {url} gave an unreadable image"
            ) from None
        truncated = clip is not None
        return CapturedImage(image, mime, header.width, header.height, final_url, truncated, status)

    async def _load(self, page: Page, url: str) -> int:
        """Navigates and waits for the page to settle; the main document's HTTP status."""
        # The proxy's own 403/502 carry EGRESS_HEADER. Chromium turns such an empty error
        # answer into a navigation error, so the verdict is read off the response event.
        verdicts: list[tuple[str, str]] = []

        def on_response(response: Response) -> None:
            verdict = response.headers.get(EGRESS_HEADER.lower())
            if verdict is not None and response.frame == page.main_frame:
                verdicts.append((verdict, response.url))

        page.on("response", on_response)
        response: Response | None = None
        failure = ""
        try:
            # No Playwright timeout: the capture's deadline bounds the navigation.
            response = await page.goto(url, wait_until="commit", timeout=0)
        except PlaywrightError as exc:
            found = _NET_ERROR.search(str(exc))
            failure = found.group(0) if found else "the navigation failed"
        if verdicts:
            verdict, where = verdicts[-1]
            if where.rstrip("/") != url.rstrip("/"):
                where = f"{url} (redirected to {where})"
            if verdict == "refused":
                raise CaptureError(
                    CaptureErrorKind.REFUSED,
                    f"Could not load {where}: the egress guard refused a non-public address",
                )
            raise CaptureError(
                CaptureErrorKind.LOAD_FAILED,
                f"Could not load {where}: the server could not be reached",
            )
        if failure == "net::ERR_BLOCKED_BY_CLIENT":
            raise CaptureError(
                CaptureErrorKind.REFUSED, f"Could not load {url}: the egress guard refused it"
            )
        if failure:
            raise CaptureError(CaptureErrorKind.LOAD_FAILED, f"Could not load {url}: {failure}")
        waits: tuple[tuple[Literal["load", "networkidle"], float], ...] = (
            ("load", self.settings.load_timeout_s),
            ("networkidle", _NETWORK_IDLE_S),
        )
        for state, wait_s in waits:
            with contextlib.suppress(PlaywrightTimeoutError):
                await page.wait_for_load_state(state, timeout=wait_s * 1000)
        with contextlib.suppress(TimeoutError, PlaywrightError):
            async with asyncio.timeout(_NETWORK_IDLE_S):
                await page.evaluate("document.fonts.ready.then(() => true)")
        if self.settings.settle_ms > 0:
            await asyncio.sleep(self.settings.settle_ms / 1000)  # let late layout land
        return response.status if response is not None else 0

    async def _encode(
        self, page: Page, wanted: Format, clip: FloatRect | None
    ) -> tuple[bytes, str]:
        limit = self.settings.max_bytes
        formats: tuple[Literal["png", "jpeg"], ...] = (
            ("png", "jpeg") if wanted == "auto" else (wanted,)
        )
        size = 0
        for kind in formats:
            quality = self.settings.jpeg_quality if kind == "jpeg" else None
            image = await page.screenshot(
                full_page=True,
                type=kind,
                quality=quality,
                clip=clip,
                timeout=0,  # bounded by the capture's deadline
            )
            if len(image) <= limit:
                return image, f"image/{kind}"
            size = len(image)
        raise CaptureError(
            CaptureErrorKind.TOO_LARGE,
            f"The captured image is {size} bytes, over the limit of {limit} bytes "
            "(S2C_CAPTURE_MAX_BYTES); capture a shorter page or ask for JPEG",
        )
