"""What a capture shows: a viewport (a name and a window size), the part of the page
kept (`page_clip`) and the PNG taken in it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import FloatRect, Page

# How long closing a page, context, browser or driver may take before it is given up.
CLOSE_TIMEOUT_S = 5.0

_PAGE_SIZE_JS = (
    "() => [Math.max(document.documentElement.scrollWidth, "
    "document.body ? document.body.scrollWidth : 0), "
    "Math.max(document.documentElement.scrollHeight, "
    "document.body ? document.body.scrollHeight : 0)]"
)


@dataclass(frozen=True, slots=True)
class Viewport:
    name: str
    width: int
    height: int

    @property
    def display_name(self) -> str:
        return f"preview_{self.name}.png"


DESKTOP = Viewport("desktop", 1280, 832)
MOBILE = Viewport("mobile", 342, 684)
VIEWPORTS = (DESKTOP, MOBILE)


def width_viewport(width: int) -> Viewport:
    """The viewport a screenshot taken at `width` CSS pixels is compared with: that width,
    at a height typical of such a screen (only the first screen; captures are full-page)."""
    height = 832 if width >= 1024 else 1024 if width >= 600 else 844
    return Viewport(f"{width}px", width, height)


@dataclass(frozen=True, slots=True)
class Capture:
    viewport: Viewport
    png: bytes
    full_page: bool = True


async def page_clip(page: Page, max_width: int, max_height: int) -> FloatRect | None:
    """The area of a full-page screenshot, when the page is larger than the limits allow
    (from its top left); None when the whole page fits."""
    try:
        size = await page.evaluate(_PAGE_SIZE_JS)
        width, height = int(size[0]), int(size[1])
    except (PlaywrightError, TypeError, ValueError, IndexError):
        # A page that broke its own DOM: only the limits are known to be safe.
        width, height = max_width + 1, max_height + 1
    if width <= max_width and height <= max_height:
        return None
    return {
        "x": 0,
        "y": 0,
        "width": min(max(width, 1), max_width),
        "height": min(max(height, 1), max_height),
    }


async def quietly(closing: Awaitable[Any]) -> None:
    """Awaits a teardown (a page's context closing, the browser's, the driver's): a crashed
    or wedged browser must neither hang the caller nor raise at it."""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(CLOSE_TIMEOUT_S):
            await closing
