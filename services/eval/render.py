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
from dataclasses import dataclass
from typing import Any

from playwright.async_api import Browser, Page, Route, async_playwright
from playwright.async_api import Error as PlaywrightError

from services.common.vendor import VendorCatalog
from services.common.vendor_route import route_offline
from services.eval.metrics import Block, Color, PageBlocks

DEFAULT_CHROMIUM = "/usr/bin/chromium"
LOAD_TIMEOUT_MS = 15_000
# Taller pages are cut here: a runaway page must not make a 100 MB screenshot.
MAX_HEIGHT_PX = 8_000

# Every visible text node with its box (page coordinates) and its colour as sRGB: a
# canvas turns any CSS colour syntax (oklch, color-mix…) into plain 0-255 channels, and a
# translucent colour is taken over white.
_EXTRACT_JS = """
() => {
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 1;
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  const toRgb = (css) => {
    ctx.clearRect(0, 0, 1, 1);
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, 1, 1);
    ctx.fillStyle = css;
    ctx.fillRect(0, 0, 1, 1);
    const d = ctx.getImageData(0, 0, 1, 1).data;
    return [d[0], d[1], d[2]];
  };
  const skip = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'TITLE', 'HEAD']);
  const root = document.body || document.documentElement;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const blocks = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.replace(/\\s+/g, ' ').trim();
    const el = node.parentElement;
    if (!text || !el || skip.has(el.tagName)) continue;
    if (!el.checkVisibility({opacityProperty: true, visibilityProperty: true})) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    const r = range.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) continue;
    blocks.push({text, x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height,
                 color: toRgb(getComputedStyle(el).color)});
  }
  const doc = document.documentElement;
  return {blocks, width: Math.max(doc.scrollWidth, innerWidth),
          height: Math.max(doc.scrollHeight, innerHeight)};
}
"""


@dataclass(frozen=True, slots=True)
class Viewport:
    width: int
    height: int


@dataclass(frozen=True, slots=True)
class Rendering:
    """A rendered page (or a PNG reference as it is)."""

    png: bytes  # full page, cut at MAX_HEIGHT_PX
    page: PageBlocks | None  # None: a PNG reference, which has no DOM


class RenderError(Exception):
    """The page could not be rendered (it hung, crashed the tab…)."""


def chromium_path() -> str:
    return os.environ.get("S2C_CHROMIUM_PATH") or DEFAULT_CHROMIUM


def blocks_from_js(data: dict[str, Any]) -> PageBlocks:
    blocks = []
    for b in data["blocks"]:
        r, g, bl = (int(v) for v in b["color"])
        color: Color = (r, g, bl)
        blocks.append(
            Block(str(b["text"]), float(b["x"]), float(b["y"]), float(b["w"]), float(b["h"]), color)
        )
    return PageBlocks(tuple(blocks), float(data["width"]), float(data["height"]))


class Renderer:
    """One Chromium for a whole eval; each render gets a fresh, offline context."""

    def __init__(self, browser: Browser, vendor: VendorCatalog | None) -> None:
        self._browser = browser
        self._vendor = vendor

    async def render(self, html: str, viewport: Viewport) -> Rendering:
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
            return await _capture(page, viewport)
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
    data = await page.evaluate(_EXTRACT_JS)
    blocks = blocks_from_js(data)
    height = min(max(int(blocks.height), viewport.height), MAX_HEIGHT_PX)
    png = await page.screenshot(
        full_page=True,
        animations="disabled",
        caret="hide",
        clip={"x": 0, "y": 0, "width": viewport.width, "height": height},
    )
    return Rendering(png, blocks)


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
