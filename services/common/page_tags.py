"""The rules of an input image's tag (`ImageMeta`): one copy for the gateway, which names
the browser's fields, and the agent, which names the proto's."""

from __future__ import annotations

import re

from services.common.project_paths import WINDOWS_DEVICES

MIN_VIEWPORT_WIDTH = 240
MAX_VIEWPORT_WIDTH = 3840
_PAGE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def width_problem(width: int) -> str | None:
    if MIN_VIEWPORT_WIDTH <= width <= MAX_VIEWPORT_WIDTH:
        return None
    return f"must be {MIN_VIEWPORT_WIDTH}-{MAX_VIEWPORT_WIDTH} CSS pixels, got {width}"


def page_problem(page: str) -> str | None:
    """Why `page` cannot name a page's file stem (`<page>.html`), or None."""
    if not _PAGE_NAME.fullmatch(page):
        return "must be a file stem: 1-64 letters, digits, '-' or '_'"
    if page.upper() in WINDOWS_DEVICES:
        return f"{page} is a Windows device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9)"
    return None


def too_many_tags(tags: int, images: int) -> str | None:
    if tags <= images:
        return None
    return f"{tags} tags for {images} images: at most one each"
