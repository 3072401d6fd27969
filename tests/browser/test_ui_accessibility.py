"""The built-in UI checked by axe-core (docs/accessibility.md) at a laptop's 1400 px and a
phone's 390 px: idle, with each dialog open, while a generation runs and once it has
finished with its scores open. No serious or critical violation anywhere, as a keyboard
user would find it: Ctrl+Enter leaves the focus in the results, and each option's scores
open from a button, not only a tooltip.

The options come from a scripted model whose streams pause once the page is written, so
the "running" check sees running options for sure; each option's page lacks an image's
alt text, which the live check reports in the option's card.
"""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from PIL import Image, ImageDraw
from playwright.async_api import Browser, Page, ViewportSize, expect

from services.common.vendor import DEFAULT_VENDOR_DIR, VendorCatalog
from services.fidelity.accessibility import AXE_FILE
from services.tools.settings import ToolsSettings
from tests.browser.pages import CHROMIUM, load_ui, local_page
from tests.fakes.openai_server import FakeOpenAI, FunctionCall, Pause, Text, chat_turn
from tests.suite import Suite, local_model, running_suite

pytestmark = pytest.mark.asyncio(loop_scope="module")

WIDE: ViewportSize = {"width": 1400, "height": 900}
NARROW: ViewportSize = {"width": 390, "height": 844}
TIMEOUT_MS = 60_000
OPTIONS = 4  # the UI asks for no count: the agent's default on the one model
PAGE = (
    '<!doctype html><html lang="en"><head><title>Bakery</title></head><body><main>'
    '<h1>Fresh bread every morning</h1><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">'
    "</main></body></html>"
)
# Every axe-core rule (WCAG A/AA and its best practices); the preview frames hold the
# generated pages, not the UI, and are left out.
RUN_ALL = """async () => {
  if (!window.axe) { %s }
  const result = await window.axe.run(document, {iframes: false, resultTypes: ["violations"]});
  return result.violations.map((v) => ({
    id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")).slice(0, 5),
  }));
}"""


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def suite(tmp_path_factory: pytest.TempPathFactory, fake: FakeOpenAI) -> AsyncIterator[Suite]:
    agent = local_model(
        fake.base_url,
        refine_rounds=0,  # the scores as they come: refinement has its own tests
    )
    tools = ToolsSettings(screenshots_enabled=True, chromium_path=CHROMIUM)
    async with running_suite(tmp_path_factory.mktemp("a11y"), agent=agent, tools=tools) as s:
        yield s


def screenshot(path: Path) -> Path:
    image = Image.new("RGB", (800, 400), "white")
    ImageDraw.Draw(image).text((40, 40), "Fresh bread every morning", fill="black")
    out = io.BytesIO()
    image.save(out, format="PNG")
    path.write_bytes(out.getvalue())
    return path


async def serious(page: Page, script: str, when: str) -> dict[str, Any]:
    """Axe-core's serious and critical violations of the UI at both widths, by width."""
    found: dict[str, Any] = {}
    for viewport in (WIDE, NARROW):
        await page.set_viewport_size(viewport)
        violations = await page.evaluate(script)
        bad = [v for v in violations if v["impact"] in ("serious", "critical")]
        if bad:
            found[f"{when} at {viewport['width']}"] = bad
    await page.set_viewport_size(WIDE)
    return found


async def test_the_ui_has_no_serious_violation_idle_in_dialogs_running_and_finished(
    tmp_path: Path, fake: FakeOpenAI, suite: Suite, browser: Browser
) -> None:
    source = VendorCatalog.load(DEFAULT_VENDOR_DIR).read(AXE_FILE).body.decode()
    script = RUN_ALL % source
    create = json.dumps({"path": "index.html", "content": PAGE})
    fake.add_chat(*[chat_turn([FunctionCall("c1", "create_file", create, pieces=2), Pause()])] * 4)
    fake.add_chat(*[chat_turn([Text(["Built it."])])] * OPTIONS)
    found: dict[str, Any] = {}
    async with local_page(browser, suite.http_url, viewport=WIDE) as page:
        await load_ui(page, suite.http_url + "/")
        found |= await serious(page, script, "idle")
        for opener, dialog in (
            ("settings-button", "settings-dialog"),
            ("design-systems-button", "design-systems-dialog"),
        ):
            await page.get_by_test_id(opener).click()
            await expect(page.get_by_test_id(dialog)).to_be_visible()
            found |= await serious(page, script, dialog)
            await page.keyboard.press("Escape")
            await expect(page.get_by_test_id(dialog)).to_be_hidden()

        await page.get_by_test_id("file-input").set_input_files(screenshot(tmp_path / "s.png"))
        await page.get_by_test_id("prompt-input").fill("The bakery page")
        await page.get_by_test_id("prompt-input").press("Control+Enter")
        # The prompt folded away with the panel: the focus went on to the results.
        await expect(page.locator("#workspace")).to_be_focused()
        for i in range(OPTIONS):  # each option's page written, its stream paused
            preview = page.get_by_test_id(f"variant-{i}-preview").content_frame
            await expect(preview.locator("h1")).to_be_visible(timeout=TIMEOUT_MS)
        await expect(page.get_by_test_id("variant-0-status")).to_have_attribute(
            "data-state", "generating"
        )
        found |= await serious(page, script, "running")
        fake.release()

        badge = page.get_by_test_id("variant-0-accessibility")
        for i in range(OPTIONS):
            check = page.get_by_test_id(f"variant-{i}-accessibility")
            await expect(check).to_have_attribute("data-worst", "critical", timeout=TIMEOUT_MS)
        # Reached and opened from the keyboard: the breakdown lists the rule by its id.
        await badge.focus()
        await page.keyboard.press("Enter")
        await expect(badge).to_have_attribute("aria-expanded", "true")
        scores = page.get_by_test_id("variant-0-scores")
        await expect(scores.locator('[data-rule="image-alt"]')).to_contain_text("critical")
        await expect(scores).to_contain_text("Closeness to the screenshot")
        found |= await serious(page, script, "finished")
        await page.get_by_test_id("variant-0-expand").click()
        await expect(page.get_by_test_id("variant-0")).to_have_attribute("role", "dialog")
        found |= await serious(page, script, "full screen")
    assert found == {}
