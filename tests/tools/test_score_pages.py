"""The pages kept between one screenshot's score renders (services/tools/score_pages.py),
over stand-ins for Playwright's browser and pages: which page a render gets is bookkeeping,
the browser's side of it is exercised by the fidelity tests."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from playwright.async_api import Browser, Page

from services.tools.score_pages import KeptPages
from services.tools.viewports import DESKTOP, Viewport


class _Context:
    def __init__(self) -> None:
        self.closed = False

    async def clear_cookies(self) -> None:
        pass

    async def close(self) -> None:
        self.closed = True


class _Page:
    def __init__(self) -> None:
        self.context = _Context()
        self.resetting = asyncio.Event()  # set once the reset's navigation has started
        self.reset_may_end = asyncio.Event()

    async def set_viewport_size(self, size: dict[str, int]) -> None:
        pass

    async def goto(self, url: str) -> None:
        assert url == "about:blank"
        self.resetting.set()
        await self.reset_may_end.wait()

    async def evaluate(self, expression: str) -> None:
        pass


class _Browser:
    def is_connected(self) -> bool:
        return True


def _kept() -> tuple[KeptPages, list[_Page]]:
    made: list[_Page] = []

    async def new_page(browser: Browser, viewport: Viewport) -> Page:
        made.append(_Page())
        return cast(Page, made[-1])

    return KeptPages(new_page, max_idle=2), made


async def _unused(browser: Browser, viewport: Viewport) -> Any:
    raise AssertionError("a render with a key never takes a preview's page")


async def test_a_render_waits_for_the_page_being_reset_instead_of_opening_another() -> None:
    kept, made = _kept()
    browser = cast(Browser, _Browser())
    first = await kept.take(browser, DESKTOP, "gen-1/img", _unused)
    giving_back = asyncio.create_task(kept.give_back(browser, first, "gen-1/img"))
    await made[0].resetting.wait()

    taking = asyncio.create_task(kept.take(browser, DESKTOP, "gen-1/img", _unused))
    other = await kept.take(browser, DESKTOP, "gen-2/img", _unused)  # no reset of its own
    made[0].reset_may_end.set()
    second = await taking
    await giving_back

    assert second is first  # the same context: one renderer for the whole generation
    assert cast(object, other) is made[1]
    assert len(made) == 2
    assert not made[0].context.closed


async def test_a_reset_that_fails_leaves_the_waiting_render_a_new_page() -> None:
    kept, made = _kept()
    browser = cast(Browser, _Browser())
    first = await kept.take(browser, DESKTOP, "gen-1/img", _unused)
    made[0].context.clear_cookies = _broken  # type: ignore[method-assign]
    giving_back = asyncio.create_task(kept.give_back(browser, first, "gen-1/img"))
    await made[0].resetting.wait()
    taking = asyncio.create_task(kept.take(browser, DESKTOP, "gen-1/img", _unused))
    made[0].reset_may_end.set()

    second = await taking
    await giving_back

    assert made[0].context.closed
    assert cast(object, second) is made[1]


async def _broken() -> None:
    raise RuntimeError("the page crashed during its reset")
