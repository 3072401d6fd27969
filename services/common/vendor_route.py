"""The offline render path: a Playwright browser context whose CDN requests are answered
from the vendored copies (`vendor.py`), in-process, before anything reaches the network.

Every renderer that drives Chromium itself uses this one function: the tool workers'
`screenshot_preview` and URL captures, `s2c eval`, and any later render of a page (the
fidelity score). What is not vendored goes to the caller's `otherwise` handler (the egress
guard in the tool workers; a refusal in eval), exactly as it would without us.

No exception ever leaves the route handler: Playwright re-raises a handler's error from
the next call on the shared connection, whoever makes it, so one page's bad URL would fail
another user's screenshot. A request whose handling failed is aborted and logged instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from urllib.parse import quote, urlsplit

from playwright.async_api import BrowserContext, Route
from playwright.async_api import Error as PlaywrightError

from services.common.vendor import VendorCatalog, VendorError
from services.common.vendor_fonts import BadFontsRequest
from services.common.vendor_urls import VENDOR_HOST

log = logging.getLogger(__name__)

RouteHandler = Callable[[Route], Awaitable[None]]

# The same lifetime the gateway gives /vendor/ (its URLs change whenever a byte does).
CACHE_CONTROL = "public, max-age=31536000, immutable"


def browser_file_url(rel: str) -> str:
    """How a generated answer (a Google Fonts stylesheet) names a vendored file inside a
    routed browser: a `.invalid` URL only this router answers."""
    return f"https://{VENDOR_HOST}/files/{quote(rel)}"


async def answer_from_vendor(route: Route, catalog: VendorCatalog | None) -> bool:
    """Fulfils `route` from the local copies when its URL is one we vendor; False when the
    caller must decide. A vendored file that fails its hash check is refused, not fetched."""
    if catalog is None:
        return False
    url = route.request.url
    try:
        # Off the loop: a first read hashes the file (Babel is 3 MB).
        answer = await asyncio.to_thread(catalog.answer, url, browser_file_url)
    except BadFontsRequest as exc:
        # The page's own malformed fonts URL: Google's answer, with the reason.
        await _quietly_fulfill(route, 400, f"Bad Google Fonts request: {exc}\n".encode())
        return True
    except (VendorError, OSError) as exc:
        log.error("vendored file refused", extra={"url": url[:200], "reason": str(exc)})
        await _quietly_abort(route)
        return True
    if answer is None:
        if urlsplit(url).hostname == VENDOR_HOST:
            await _quietly_abort(route)  # our own namespace: never sent anywhere
            return True
        return False
    await _quietly_fulfill(route, 200, answer.body, answer.content_type)
    return True


async def route_offline(
    context: BrowserContext, catalog: VendorCatalog | None, otherwise: RouteHandler
) -> None:
    """Routes every request of `context`: vendored CDN URLs from the local copies, the rest
    to `otherwise`. Call before the context's first page loads anything."""

    async def handle(route: Route) -> None:
        try:
            if not await answer_from_vendor(route, catalog):
                await otherwise(route)
        except Exception:
            # Raised, it would fail whichever call comes next on the shared connection.
            url = route.request.url[:200]
            log.exception("browser request handler failed; aborted", extra={"url": url})
            await _quietly_abort(route)

    await context.route("**/*", handle)


async def _quietly_fulfill(
    route: Route, status: int, body: bytes, content_type: str = "text/plain; charset=utf-8"
) -> None:
    # Module scripts and fonts are CORS requests; the CDNs answer them with `*`.
    headers = {"access-control-allow-origin": "*"}
    if status == 200:
        headers["cache-control"] = CACHE_CONTROL
    with contextlib.suppress(PlaywrightError):  # the page closed while we answered
        await route.fulfill(status=status, body=body, content_type=content_type, headers=headers)


async def _quietly_abort(route: Route) -> None:
    # Also after a failed handler, which may have answered the route already.
    with contextlib.suppress(Exception):
        await route.abort("blockedbyclient")
