"""The fidelity badge of the built-in UI (docs/fidelity.md), with a fake model.

The screenshot is a small page rendered by the tool worker's browser; of the UI's four
options, two write that very page and two another. Each option gets a badge once scored,
its title holds every metric, and exactly one badge, of an option that wrote the
screenshot's page, is marked best. The gRPC side is tests/e2e/test_fidelity.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, expect

from services.tools.settings import ToolsSettings
from tests.browser.pages import CHROMIUM, load_ui, local_page
from tests.e2e.test_fidelity import OTHER, SAME
from tests.fakes.openai_server import FakeOpenAI, FunctionCall, SseReply, Text, chat_turn
from tests.suite import local_model, running_suite

pytestmark = pytest.mark.asyncio(loop_scope="module")

TIMEOUT_MS = 60_000


@pytest_asyncio.fixture(loop_scope="module")
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


def create(page: str) -> SseReply:
    arguments = json.dumps({"path": "index.html", "content": page})
    return chat_turn([FunctionCall("call_1", "create_file", arguments, pieces=2)])


async def test_the_ui_shows_a_badge_per_option_and_marks_the_best(
    tmp_path: Path, fake: FakeOpenAI, browser: Browser
) -> None:
    # The UI asks for no count: the agent runs its default four options on the one model.
    # Each option's first turn writes a page and its second ends, whatever their order.
    fake.add_first_chat_turns(create(OTHER), create(SAME), create(OTHER), create(SAME))
    fake.script_chat(chat_turn([Text(["Built it."])]))
    agent = local_model(
        fake.base_url,
        refine_rounds=0,  # scores only: refinement has its own tests (e2e/test_refine.py)
    )
    tools = ToolsSettings(screenshots_enabled=True, chromium_path=CHROMIUM)
    async with (
        running_suite(tmp_path, agent=agent, tools=tools) as suite,
        local_page(browser, suite.http_url) as page,
    ):
        shooter = suite.tools.worker.screenshotter
        assert shooter is not None
        png, _ = await shooter.render_for_score(SAME, 1000, 700, "() => 0", timeout_s=30)
        screenshot = tmp_path / "screenshot.png"
        screenshot.write_bytes(png)
        await load_ui(page, suite.http_url + "/")
        await page.get_by_test_id("file-input").set_input_files(screenshot)
        await page.get_by_test_id("generate-button").click()
        badges = [page.get_by_test_id(f"variant-{i}-fidelity") for i in range(4)]
        runbar = page.get_by_test_id("run-status")
        for badge in badges:
            await expect(badge).to_have_attribute("data-available", "true", timeout=TIMEOUT_MS)
        # Marked once every option is scored: the last score may move the mark.
        await expect(page.locator('.badge-fidelity[data-best="true"]')).to_have_count(1)
        best = [await b.get_attribute("data-best") for b in badges]
        titles = [await b.get_attribute("title") or "" for b in badges]
        texts = [await b.text_content() or "" for b in badges]
        codes = [v.code for v in suite.agent.manager.generations()[0].variants]
        # An option whose page is another: its worst regions drawn over its preview.
        other = next(i for i, code in enumerate(codes) if code == OTHER)
        await page.get_by_test_id(f"variant-{other}-regions-toggle").click()
        boxes = page.get_by_test_id(f"variant-{other}-regions").locator(".fidelity-region")
        await expect(boxes.first).to_be_visible()
        assert await boxes.count() >= 2
        box_titles = [await b.get_attribute("title") or "" for b in await boxes.all()]
        # Done once the scores came; the run is never recorded as cancelled.
        await expect(runbar).to_have_attribute("data-state", "done")
    assert any("the screenshot has “Fresh bread every morning”" in t for t in box_titles)
    same = {i for i, code in enumerate(codes) if code == SAME}
    assert len(same) == 2
    assert best.index("true") in same
    assert texts[best.index("true")].startswith("★ fidelity ")
    for title in titles:
        # The breakdown on hover: every metric of the one image scored, at its width.
        assert re.search(
            r"image 1 at 1000 px: block-match \d+%, text \d+%, position \d+%, color \d+%, "
            r"visual \d+%",
            title,
        ), title
