"""Select and edit in the built-in UI (docs/fidelity.md, "Updates keep what was not asked
for"; issue 37 item 3), with a scripted model and the real tool worker.

The user picks the heading in an option's preview and asks for a change; the update's
params carry the element as upstream's UI sends it (`fullText` and
`selectedElementHtml`). The scripted model changes the heading and the footer, and keeps
the footer when told: the footer's box is drawn over the new option's preview.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, expect

from services.tools.settings import ToolsSettings
from tests.browser.pages import CHROMIUM
from tests.browser.test_ui import generations, open_ui, wait_complete
from tests.e2e.test_update_guard import FOOTER, HEADING, NEW_FOOTER, NEW_HEADING, PAGE
from tests.fakes.openai_server import FakeOpenAI, FunctionCall, SseReply, Text, chat_turn
from tests.suite import local_model, running_suite

pytestmark = pytest.mark.asyncio(loop_scope="module")

TIMEOUT_MS = 60_000
INSTRUCTION = "Say that we sell cakes too"


@pytest_asyncio.fixture(loop_scope="module")
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


async def click_in_preview(page: Page, testid: str, selector: str) -> None:
    """A user's click on an element of a preview. The preview frame is scaled down by a
    CSS transform, which Playwright's own click does not follow (it aims at the unscaled
    box, outside the frame): the point is computed from the frame's scale."""
    frame = page.get_by_test_id(testid)
    outer = await frame.bounding_box()
    width = await frame.evaluate("f => f.offsetWidth")
    rect = await frame.content_frame.locator(selector).evaluate(
        "e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; }"
    )
    assert outer is not None
    scale = outer["width"] / width
    x, y = rect[0] + rect[2] / 2, rect[1] + rect[3] / 2
    await page.mouse.click(outer["x"] + x * scale, outer["y"] + y * scale)


def call(name: str, **arguments: str) -> SseReply:
    return chat_turn([FunctionCall("call_1", name, json.dumps(arguments), pieces=2)])


async def test_an_element_picked_in_the_preview_goes_with_the_update(
    tmp_path: Path, fake: FakeOpenAI, browser: Browser
) -> None:
    # Each conversation by its turn (the assistant messages it holds): the create writes
    # the page; the update's history holds the create's answer, so its first turn is 1.
    fake.script_chat(
        call("create_file", path="index.html", content=PAGE), chat_turn([Text(["Built it."])])
    )
    agent = local_model(fake.base_url)
    tools = ToolsSettings(screenshots_enabled=True, chromium_path=CHROMIUM)
    async with (
        running_suite(tmp_path, agent=agent, tools=tools) as suite,
        open_ui(browser, suite) as (page, recorder),
    ):
        await page.get_by_test_id("prompt-input").fill("A bakery's page")
        await page.get_by_test_id("generate-button").click()
        await wait_complete(page, 4)
        fake.script_chat(
            chat_turn([Text(["unused"])]),
            call("edit_file", path="index.html", old_text=HEADING, new_text=NEW_HEADING),
            call("edit_file", path="index.html", old_text=FOOTER, new_text=NEW_FOOTER),
            chat_turn([Text(["Done."])]),
            chat_turn([Text(["The new footer goes with the change."])]),
        )
        select = page.get_by_test_id("select-element")
        await select.click()
        await expect(select).to_have_attribute("aria-pressed", "true")
        preview = page.get_by_test_id("variant-0-preview").content_frame
        await click_in_preview(page, "variant-0-preview", "h1")
        await expect(select).to_have_attribute("aria-pressed", "false")
        chosen = page.get_by_test_id("update-selection")
        await expect(chosen).to_be_visible()
        await expect(chosen).to_contain_text('<h1 id="title">')
        # The pick is outlined in the preview, by a box of the UI's own outside the page.
        await expect(preview.locator("[data-s2c-selected]")).to_be_visible()
        await page.get_by_test_id("update-input").fill(INSTRUCTION)
        await page.get_by_test_id("update-button").click()
        await expect(page.get_by_test_id("version-2")).to_have_attribute("aria-current", "true")
        await wait_complete(page)
        boxes = page.locator('[data-testid$="-changes"] .changes-region')
        await expect(boxes.first).to_be_visible(timeout=TIMEOUT_MS)
        titles = [await b.get_attribute("title") or "" for b in await boxes.all()]
        await expect(chosen).to_be_hidden()
        [params] = recorder.sockets[1]
        recorder.check_clean()
        update = generations(suite)[1]
    assert params["prompt"]["selectedElementHtml"] == HEADING
    assert params["prompt"]["fullText"] == (
        f"{INSTRUCTION}\n\nApply the change to this specific element, which the user selected "
        f"in the preview:\n```html\n{HEADING}\n```\nThe snippet is the element as the browser "
        "rendered it (its DOM), which can differ from the source."
    )
    assert params["prompt"]["text"] == INSTRUCTION
    assert update.request.prompt.selected_element_html == HEADING
    assert any("was “Visit us on Rua Augusta”, now “Closed on Mondays”" in t for t in titles)
    for variant in update.variants:
        assert [c.check for c in variant.unrequested_changes] == [0, 1]
