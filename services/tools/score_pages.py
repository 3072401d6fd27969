"""Pages kept between the fidelity renders of one screenshot (docs/fidelity.md, "Cost").

A fresh browser context per render (a renderer process, the proxy's auth probe, the
routes) costs about 1 s of CPU, four times the render itself: a score for every option
and round cannot afford it. So a page that rendered a score is kept for the next render
against the same screenshot only (in practice the other options and rounds of the same
generation); renders against different screenshots never share a page, and previews
and captures never use a kept one.

Right after a render the page goes to `about:blank` (a new document and window: nothing
of the rendered page runs on or stays; an opaque origin has no storage), its `window.name`
is emptied and its cookies are cleared, so an idle page runs nothing. A page that does
not come back within RESET_TIMEOUT_S (it hangs, it crashed) is closed. A render that finds
no idle page for its screenshot while one is being reset waits for that reset (tens of
milliseconds) instead of opening a context: a generation's options score one after another
(one score place per generation), and each used to start just before the last one's page
was back, so four options opened four contexts. A page is reused
at most MAX_USES times and at most `max_idle` pages are kept, the least recently used
closed first.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from playwright.async_api import Browser, Page

from services.tools.viewports import Viewport, quietly

MAX_USES = 50
RESET_TIMEOUT_S = 5.0

NewPage = Callable[[Browser, Viewport], Awaitable[Page]]


class KeptPages:
    def __init__(self, new_page: NewPage, max_idle: int) -> None:
        self._new_page = new_page
        self._max_idle = max(1, max_idle)
        # Idle pages, least recently used first: (screenshot key, page) → its browser.
        self._idle: OrderedDict[tuple[str, Page], Browser] = OrderedDict()
        self._uses: dict[Page, int] = {}
        # Per key, the resets under way: each future is done when its page is idle or closed.
        self._resetting: dict[str, set[asyncio.Future[None]]] = {}

    async def take(self, browser: Browser, viewport: Viewport, key: str, fresh: NewPage) -> Page:
        """A page kept for `key` in `browser`, sized to `viewport`; else a new one (without
        a key: `fresh`'s, used once, as for previews)."""
        if not key:
            return await fresh(browser, viewport)
        while True:
            page = await self._idle_page(browser, viewport, key)
            if page is not None:
                return page
            resetting = self._resetting.get(key)
            if not resetting:
                break
            # Bounded: a reset ends within RESET_TIMEOUT_S, kept or closed.
            await asyncio.wait(resetting, return_when=asyncio.FIRST_COMPLETED)
        page = await self._new_page(browser, viewport)
        self._uses[page] = 0
        return page

    async def _idle_page(self, browser: Browser, viewport: Viewport, key: str) -> Page | None:
        for (kept_for, page), owner in list(self._idle.items()):
            if kept_for != key or owner is not browser:
                continue
            del self._idle[(kept_for, page)]
            try:
                await page.set_viewport_size({"width": viewport.width, "height": viewport.height})
                return page
            except asyncio.CancelledError:
                self._idle[(kept_for, page)] = owner  # still idle: whoever comes next resizes
                raise
            except Exception:  # it crashed or closed while idle: a new one instead
                self._uses.pop(page, None)
                await quietly(page.context.close())
        return None

    async def give_back(self, browser: Browser, page: Page, key: str) -> None:
        """After a render: the page reset and kept for `key`, or closed."""
        uses = self._uses.pop(page, MAX_USES) + 1
        if not key or uses >= MAX_USES or not browser.is_connected():
            await quietly(page.context.close())
            return
        done = asyncio.get_running_loop().create_future()
        self._resetting.setdefault(key, set()).add(done)
        try:
            await self._reset(browser, page, key, uses)
        finally:
            resetting = self._resetting[key]
            resetting.discard(done)
            if not resetting:
                del self._resetting[key]
            done.set_result(None)

    async def _reset(self, browser: Browser, page: Page, key: str, uses: int) -> None:
        try:
            async with asyncio.timeout(RESET_TIMEOUT_S):
                await page.goto("about:blank")
                # The one thing a tab keeps across documents of the same site.
                await page.evaluate("() => { window.name = '' }")
                await page.context.clear_cookies()
        except Exception:
            await quietly(page.context.close())
            return
        self._uses[page] = uses
        self._idle[(key, page)] = browser
        while len(self._idle) > self._max_idle:
            (_, oldest), _ = self._idle.popitem(last=False)
            self._uses.pop(oldest, None)
            await quietly(oldest.context.close())

    async def close(self) -> None:
        idle = [page for _, page in self._idle]
        self._idle.clear()
        self._uses.clear()
        for page in idle:
            await quietly(page.context.close())
