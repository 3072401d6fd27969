"""Pages made ahead of use, one per default viewport, for the previews (screenshot.py).

A new context is a new renderer process: making one takes longer than rendering the page
in it. So one unused page per viewport is kept ready; a capture takes it, and its
replacement is started once that capture is done with the CPU (`restock`), so starting
renderers never slows the capture that used them up. Each page is used once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from playwright.async_api import Browser, Page

from services.tools.viewports import VIEWPORTS, Viewport, quietly

MakePage = Callable[[Browser, Viewport], Coroutine[Any, Any, Page]]


class Spares:
    def __init__(
        self, new_page: MakePage, in_background: Callable[[Coroutine[Any, Any, None]], None]
    ) -> None:
        self._new_page = new_page
        self._in_background = in_background
        self._ready: dict[Viewport, tuple[Browser, asyncio.Task[Page]]] = {}

    @property
    def pending(self) -> list[asyncio.Task[Page]]:
        return [task for _, task in self._ready.values()]

    def restock(self, browser: Browser) -> None:
        """Start a page for each default viewport that has none."""
        for viewport in VIEWPORTS:
            if viewport not in self._ready:
                task = asyncio.create_task(self._new_page(browser, viewport))
                self._ready[viewport] = (browser, task)

    def discard_all(self) -> None:
        for _, spare in self._ready.values():
            self._discard(spare)
        self._ready.clear()

    async def take(self, browser: Browser, viewport: Viewport) -> Page:
        """The spare for `viewport` if one was made in `browser`, else a new page."""
        owner, spare = self._ready.pop(viewport, (None, None))
        if spare is None or owner is not browser:
            if spare is not None:
                self._discard(spare)  # built in a browser that has since died
            return await self._new_page(browser, viewport)
        try:
            return await spare
        except asyncio.CancelledError:
            self._discard(spare)  # it may have finished just as we were cancelled
            raise
        except Exception:
            return await self._new_page(browser, viewport)

    def _discard(self, spare: asyncio.Task[Page]) -> None:
        async def close_it() -> None:
            spare.cancel()
            await asyncio.wait({spare})
            if not spare.cancelled() and spare.exception() is None:
                await quietly(spare.result().context.close())

        self._in_background(close_it())
