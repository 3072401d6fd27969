"""Render a page in Chromium at a viewport: its screenshot and the text blocks of its DOM.

Reference and candidate go through the same renderer (same Chromium, fonts, viewport), so
their differences are the pages' own. Nothing leaves the machine: the stacks' CDN runtimes
(Tailwind, React, Babel, Vue, Bootstrap, Ionic, Font Awesome, Google Fonts) are answered
from the vendored copies through the suite's one offline render path
(`services.common.vendor_route`), `data:` URLs load, and every other request (an image URL,
a CDN file we do not carry) is refused.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace

from playwright.async_api import Browser, Page, Route, async_playwright
from playwright.async_api import Error as PlaywrightError

from services.common.accessibility import A11yReport
from services.common.vendor import VendorCatalog
from services.common.vendor_route import route_offline
from services.fidelity.accessibility import AxeScript, report_from_js
from services.fidelity.dom import EXTRACT_JS, blocks_from_js, words_from_js
from services.fidelity.lines import Word
from services.fidelity.metrics import PageBlocks
from services.fidelity.ocr import OcrPage

DEFAULT_CHROMIUM = "/usr/bin/chromium"
LOAD_TIMEOUT_MS = 15_000
# Taller pages are cut here: a runaway page must not make a 100 MB screenshot.
MAX_HEIGHT_PX = 8_000


@dataclass(frozen=True, slots=True)
class Viewport:
    width: int
    height: int


@dataclass(frozen=True, slots=True)
class Rendering:
    """A rendered page (or a PNG reference as it is)."""

    png: bytes  # full page, cut at MAX_HEIGHT_PX
    page: PageBlocks | None  # None: a PNG reference, which has no DOM
    # The DOM's words with their boxes, for scoring against a PNG reference's OCR blocks.
    words: tuple[Word, ...] = ()
    # A PNG reference's text blocks read by OCR (None: an HTML reference, or no Tesseract).
    ocr: OcrPage | None = None
    # axe-core's check of the same page, once its screenshot is taken (a candidate only).
    accessibility: A11yReport | None = None


class RenderError(Exception):
    """The page could not be rendered (it hung, crashed the tab…)."""


class _ScreenshotFailed(Exception):
    """Chromium took no screenshot of a loaded page: under CPU contention it now and then
    answers "Unable to capture screenshot" or never answers (docs/architecture.md,
    "Stalled pages"); a fresh context renders the page."""


def chromium_path() -> str:
    return os.environ.get("S2C_CHROMIUM_PATH") or DEFAULT_CHROMIUM


class Renderer:
    """One Chromium for a whole eval; each render gets a fresh, offline context."""

    def __init__(self, browser: Browser, vendor: VendorCatalog | None) -> None:
        self._browser = browser
        self._vendor = vendor
        self._axe = AxeScript(vendor)

    async def render(
        self, html: str, viewport: Viewport, *, accessibility: bool = False
    ) -> Rendering:
        """The page at `viewport`; with `accessibility`, also checked by axe-core in the
        same load (docs/accessibility.md), unless axe-core is not installed. A failed
        screenshot is taken once more, in a fresh context."""
        try:
            return await self._render(html, viewport, accessibility)
        except _ScreenshotFailed:
            try:
                return await self._render(html, viewport, accessibility)
            except _ScreenshotFailed as exc:
                raise RenderError(str(exc)) from None

    async def _render(self, html: str, viewport: Viewport, accessibility: bool) -> Rendering:
        context = await self._browser.new_context(
            viewport={"width": viewport.width, "height": viewport.height},
            device_scale_factor=1,
            reduced_motion="reduce",
            java_script_enabled=True,
        )
        try:
            await route_offline(context, self._vendor, _refuse)
            page = await context.new_page()
            page.set_default_timeout(LOAD_TIMEOUT_MS)
            await page.set_content(html, wait_until="load")
            rendering = await _capture(page, viewport)
            if not accessibility or self._axe.unavailable:
                return rendering
            check = report_from_js(await page.evaluate(self._axe.expression), viewport.width)
            return replace(rendering, accessibility=check)
        except PlaywrightError as exc:
            raise RenderError(exc.message.splitlines()[0] if exc.message else str(exc)) from None
        finally:
            with contextlib.suppress(PlaywrightError):
                await context.close()


async def _refuse(route: Route) -> None:
    if route.request.url.startswith("data:"):
        await route.continue_()
    else:
        await route.abort("blockedbyclient")


async def _capture(page: Page, viewport: Viewport) -> Rendering:
    data = await page.evaluate(EXTRACT_JS)
    blocks = blocks_from_js(data)
    height = min(max(int(blocks.height), viewport.height), MAX_HEIGHT_PX)
    try:
        png = await page.screenshot(
            full_page=True,
            animations="disabled",
            caret="hide",
            clip={"x": 0, "y": 0, "width": viewport.width, "height": height},
        )
    except PlaywrightError as exc:
        raise _ScreenshotFailed(exc.message.splitlines()[0] if exc.message else str(exc)) from None
    return Rendering(png, blocks, words_from_js(data, height))


@contextlib.asynccontextmanager
async def renderer(vendor: VendorCatalog | None) -> AsyncIterator[Renderer]:
    """A Renderer; `vendor` None renders CDN-dependent pages without their runtimes."""
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=chromium_path(), args=["--font-render-hinting=none"]
        )
        try:
            yield Renderer(browser, vendor)
        finally:
            with contextlib.suppress(PlaywrightError):
                await browser.close()
