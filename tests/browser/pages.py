"""What every browser test module does the same way: one Chromium, and the UI opened in a
fresh context that may load only the gateway's own URLs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager

from aiohttp import web
from playwright.async_api import Browser, Page, Route, ViewportSize, async_playwright, expect

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ("--no-sandbox", "--disable-gpu", "--disable-background-networking")
VIEWPORT: ViewportSize = {"width": 1440, "height": 900}


@asynccontextmanager
async def chromium(args: Sequence[str] = CHROMIUM_ARGS) -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=list(args))
        try:
            yield browser
        finally:
            await browser.close()


@asynccontextmanager
async def local_page(
    browser: Browser,
    base_url: str,
    *,
    on_external: Callable[[str], None] | None = None,
    accept_downloads: bool | None = None,
    viewport: ViewportSize = VIEWPORT,
) -> AsyncIterator[Page]:
    """A page in its own context (own storage), closed afterwards. Every request outside
    `base_url` is aborted; `on_external` hears those the page itself made (not its
    frames'). Not navigated yet, so the caller can attach its listeners first."""
    context = await browser.new_context(viewport=viewport, accept_downloads=accept_downloads)
    page = await context.new_page()

    async def local_only(route: Route) -> None:
        if route.request.url.startswith(base_url + "/"):
            await route.continue_()
            return
        if on_external is not None and route.request.frame == page.main_frame:
            on_external(route.request.url)
        await route.abort()

    await context.route("**/*", local_only)
    try:
        yield page
    finally:
        await context.close()


@asynccontextmanager
async def html_server(html: str) -> AsyncIterator[int]:
    """A loopback server answering `/` with `html` (another origin than the suite's):
    its port."""

    async def page(_: web.Request) -> web.Response:
        return web.Response(text=html, content_type="text/html")

    app = web.Application()
    app.router.add_get("/", page)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield int(runner.addresses[0][1])
    finally:
        await runner.cleanup()


async def load_ui(page: Page, url: str) -> None:
    """Navigate and wait until the UI says it is ready for input."""
    await page.goto(url)
    await expect(page.locator("html")).to_have_attribute("data-ready", "true")
