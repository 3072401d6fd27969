"""The browser fixture every module here shares: one Chromium per module, on the module's
event loop (each test opens its own context in it)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from playwright.async_api import Browser

from tests.browser.pages import CHROMIUM_ARGS, chromium


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def browser(request: pytest.FixtureRequest) -> AsyncIterator[Browser]:
    # A module may launch with more flags by naming them in its own CHROMIUM_ARGS.
    async with chromium(getattr(request.module, "CHROMIUM_ARGS", CHROMIUM_ARGS)) as browser:
        yield browser
