"""The built-in UI's live preview with no network: pages styled from the gateway's local
CDN copies, a preview that keeps updating while an asset never answers, and a notice that
names the asset instead of leaving the user guessing.

"No network" is Chromium's resolver failing every name but loopback, and every request
outside the gateway left unanswered forever (a firewall that drops packets: the worst
case, where the old preview froze until `load`). A fake model streams the page slowly,
then calls `screenshot_preview`, whose PNGs (from the tool worker, whose resolver knows no
public name either) must be styled too. The offline export is compared with the offline
render, screenshot against screenshot.
"""

from __future__ import annotations

import base64
import io
import json
import re
import zipfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from PIL import Image, ImageChops
from playwright.async_api import Browser, Page, Route, expect

from services.agent.settings import AgentSettings
from services.common.vendor import DEFAULT_VENDOR_DIR, VendorCatalog
from services.common.vendor_route import route_offline
from services.gateway.export import build_export
from services.tools.settings import ToolsSettings
from tests.browser.pages import CHROMIUM, VIEWPORT, load_ui
from tests.browser.pages import CHROMIUM_ARGS as BASE_CHROMIUM_ARGS
from tests.fakes.openai_server import FakeOpenAI, FunctionCall, SseReply, Text, chat_turn
from tests.offline_pages import REACT_PAGE, RED, RED_CSS, tailwind_page
from tests.suite import running_suite

pytestmark = pytest.mark.asyncio(loop_scope="module")

CHROMIUM_ARGS = [*BASE_CHROMIUM_ARGS, "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
TIMEOUT_MS = 30_000
HUNG_IMAGE = '<img src="https://placehold.co/600x400" alt="never answers">'


def create_turn(page: str, pieces: int) -> tuple[SseReply, SseReply]:
    arguments = json.dumps({"path": "index.html", "content": page})
    create = FunctionCall("call_1", "create_file", arguments, pieces=pieces)
    return chat_turn([create]), chat_turn([Text(["Built it."])])


@asynccontextmanager
async def offline_ui(browser: Browser, base_url: str) -> AsyncIterator[Page]:
    context = await browser.new_context(viewport=VIEWPORT)
    hung: list[Route] = []

    async def only_the_gateway(route: Route) -> None:
        if route.request.url.startswith(base_url + "/"):
            await route.continue_()
        else:
            hung.append(route)  # never answered while the test runs

    await context.route("**/*", only_the_gateway)
    try:
        page = await context.new_page()
        await load_ui(page, base_url + "/")
        yield page
    finally:
        for route in hung:
            await route.abort()
        await context.close()


def screenshots_sent(fake: FakeOpenAI) -> list[Image.Image]:
    """Every PNG the agent sent the model (screenshot_preview's captures)."""
    found = re.findall(
        r"data:image/png;base64,([A-Za-z0-9+/=]+)",
        json.dumps([request.json for request in fake.requests]),
    )
    return [Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB") for data in found]


async def generate(page: Page, prompt: str) -> None:
    # After a generation the New page panel is folded; it opens again on its toggle.
    toggle = page.get_by_test_id("new-toggle")
    if await toggle.get_attribute("aria-expanded") == "false":
        await toggle.click()
    await page.get_by_test_id("stack-select").select_option("html_tailwind")
    await page.get_by_test_id("prompt-input").fill(prompt)
    await page.get_by_test_id("generate-button").click()


async def test_offline_preview_is_styled_keeps_updating_and_says_what_failed(
    tmp_path: Path, browser: Browser
) -> None:
    # 120 paragraphs in 80 pieces, 40 ms apart: about 3 s of streaming code.
    streamed = tailwind_page(lines=120, extra=HUNG_IMAGE)
    async with FakeOpenAI(frame_interval_s=0.04) as fake:
        creates = [create_turn(streamed, pieces=80) for _ in range(4)]
        # Each option then looks at its page, as the prompt asks: the tool worker renders it.
        look = chat_turn([FunctionCall("call_2", "screenshot_preview", "{}", pieces=1)])
        fake.add_chat(*(c for c, _ in creates), *([look] * 4), *(d for _, d in creates))
        fake.add_chat(*(create_turn(REACT_PAGE, pieces=4)[0] for _ in range(4)))
        fake.add_chat(*(create_turn(REACT_PAGE, pieces=4)[1] for _ in range(4)))
        agent = AgentSettings(
            demo_pace_s=0.0,
            provider_max_retries=0,
            pinned_models=("local:tiny",),
            local_models=("tiny",),
            local_base_url=fake.base_url,
        )
        # The tool worker's resolver fails every name too (no test routes): offline.
        tools = ToolsSettings(screenshots_enabled=True, chromium_path=CHROMIUM)
        async with (
            running_suite(tmp_path, agent=agent, tools=tools) as suite,
            offline_ui(browser, suite.http_url) as page,
        ):
            # The tool worker's Chromium is up before the stream, as in a running suite.
            shooter = suite.tools.worker.screenshotter
            assert shooter is not None
            await shooter.warm()
            # Every update of option 1's preview while create_file streams, timed in the page
            # (no polling from here): until the next tool call (the screenshots, whose
            # capture shares the two cores) shows up in its feed.
            await page.evaluate(
                """() => {
                    window.__renders = [];
                    new MutationObserver((records) => {
                      for (const r of records) {
                        const card = r.target.closest?.('[data-testid="variant-0"]');
                        const looked = card?.querySelector('[data-tool="screenshot_preview"]');
                        if (!card || looked) continue;
                        window.__renders.push(performance.now());
                      }
                    }).observe(document.body, {subtree: true, attributeFilter: ["data-rendered"]});
                }"""
            )
            await generate(page, "A red page")
            status = page.get_by_test_id("variant-0-status")
            await expect(status).to_have_attribute("data-state", "complete", timeout=TIMEOUT_MS)
            preview = page.get_by_test_id("variant-0-preview").content_frame
            await expect(preview.locator("body")).to_have_css("background-color", RED_CSS)
            await expect(preview.locator("#title")).to_have_css("font-family", re.compile("Inter"))
            # Web fonts came from the local copy: the face is loaded, not a fallback.
            loaded = await preview.locator("body").evaluate(
                "() => document.fonts.check('700 16px Inter')"
            )
            assert loaded
            notice = page.get_by_test_id("variant-0-preview-notice")
            await expect(notice).to_have_text(
                "placehold.co unreachable: an image did not load in the preview; the code is fine.",
                timeout=TIMEOUT_MS,
            )
            renders: list[float] = await page.evaluate("window.__renders")
            # What screenshot_preview returned to the model: red PNGs, desktop and mobile.
            shots = screenshots_sent(fake)
            assert len(shots) == 8
            assert {shot.getpixel((5, 5)) for shot in shots} == {RED}

            # React + Tailwind mounts from the local React, ReactDOM, Babel and Tailwind.
            await generate(page, "A React page")
            await expect(status).to_have_attribute("data-state", "complete", timeout=TIMEOUT_MS)
            react = page.get_by_test_id("variant-0-preview").content_frame
            mounted = react.locator("#mounted")
            await expect(mounted).to_have_text("React mounted 3 times", timeout=TIMEOUT_MS)
            await expect(mounted).to_have_css("background-color", RED_CSS)
            await expect(page.get_by_test_id("variant-0-preview-notice")).to_be_hidden()

    # The stream was live though an image never loads: the preview kept showing new code
    # while create_file streamed, not once at the end. How often is measured by
    # bench/preview.py (freshness), not asserted: a loaded machine stretches any one gap.
    assert len(renders) >= 2, renders


async def screenshot(browser: Browser, *, html: str = "", url: str = "") -> bytes:
    """A full-page PNG; the original page is rendered the way the tool workers render it
    (CDN URLs from the local copies), the export from disk with everything else refused."""
    catalog = VendorCatalog.load(DEFAULT_VENDOR_DIR)
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    refused: list[str] = []

    async def refuse(route: Route) -> None:
        if route.request.url.startswith(("file:", "data:")):
            await route.continue_()
        else:
            refused.append(route.request.url)
            await route.abort("blockedbyclient")

    await route_offline(context, catalog if html else None, refuse)
    try:
        page = await context.new_page()
        if html:
            await page.set_content(html, wait_until="load")
        else:
            await page.goto(url, wait_until="load")
        await page.evaluate("document.fonts.ready.then(() => true)")
        await expect(page.locator("body")).not_to_be_empty()
        png = await page.screenshot(full_page=True, animations="disabled")
    finally:
        await context.close()
    assert refused == []
    return png


@pytest.mark.parametrize("html", [tailwind_page(lines=5), REACT_PAGE], ids=["tailwind", "react"])
async def test_the_offline_export_opens_without_network_and_looks_the_same(
    tmp_path: Path, browser: Browser, html: str
) -> None:
    archive = await build_export(html, runtimes=VendorCatalog.load(DEFAULT_VENDOR_DIR))
    with zipfile.ZipFile(io.BytesIO(archive)) as zipped:
        zipped.extractall(tmp_path)
    assert "https://" not in (tmp_path / "index.html").read_text()
    original = Image.open(io.BytesIO(await screenshot(browser, html=html))).convert("RGB")
    exported = await screenshot(browser, url=(tmp_path / "index.html").as_uri())
    opened = Image.open(io.BytesIO(exported)).convert("RGB")
    assert original.getpixel((5, 5)) == RED
    assert opened.size == original.size
    assert ImageChops.difference(original, opened).getbbox() is None  # pixel for pixel
