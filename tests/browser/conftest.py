"""The browser fixture every module here shares: one Chromium per module, on the module's
event loop (each test opens its own context in it)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from playwright.async_api import Browser, expect

from tests.browser.pages import CHROMIUM_ARGS, chromium

# How long an `expect` waits for the page to get there (Playwright's default is 5 s). A
# bound, not a measurement: each waits on an event and passes as soon as it happens, but a
# two-core CI machine running two test workers and their Chromiums has stalled a UI for
# more than 5 s (a click handled late, a run bar still "running").
expect.set_options(timeout=20_000)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def browser(request: pytest.FixtureRequest) -> AsyncIterator[Browser]:
    # A module may launch with more flags by naming them in its own CHROMIUM_ARGS.
    async with chromium(getattr(request.module, "CHROMIUM_ARGS", CHROMIUM_ARGS)) as browser:
        yield browser
