"""A site of several pages in the built-in UI: screenshots tagged with pages in the "New
page" panel, the demo model building one file per page, page tabs per option, and a link
clicked in the preview opening the page it names (in the same sandboxed preview), the
site's shared stylesheet applied there, and the option downloaded as a zip of the site, and
as one for use with no network."""

from __future__ import annotations

import base64
import zipfile
from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from tests.browser.test_reconnect import GENERATION_TIMEOUT_MS, ui
from tests.suite import png_data_url, running_suite

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_page_tabs_and_links_between_pages(tmp_path: Path, browser: Browser) -> None:
    shots = []
    for name, color in (("home", "#224488"), ("pricing", "#884422")):
        path = tmp_path / f"{name}.png"
        path.write_bytes(base64.b64decode(png_data_url(color=color).partition(",")[2]))
        shots.append(path)
    async with running_suite(tmp_path) as suite, ui(browser, suite.http_url) as (page, sockets):
        await page.get_by_test_id("file-input").set_input_files(shots)
        await page.get_by_test_id("shot-0-page").fill("index")
        await page.get_by_test_id("shot-1-page").fill("pricing")
        await page.get_by_test_id("generate-button").click()
        await expect(page.get_by_test_id("variant-0-status")).to_have_attribute(
            "data-state", "complete", timeout=GENERATION_TIMEOUT_MS
        )
        tabs = page.get_by_test_id("variant-0-pages").get_by_role("tab")
        await expect(tabs).to_have_text(["index.html", "pricing.html"])
        preview = page.get_by_test_id("variant-0-preview").content_frame
        await expect(preview.locator("[data-demo-page]")).to_have_text("Page: index")
        # The site's shared stylesheet (site.css, a file of its own) styles the preview.
        await expect(preview.locator("[data-demo-site]")).to_have_css(
            "background-color", "rgb(17, 24, 39)"
        )
        # A tab shows its page…
        await tabs.nth(1).click()
        await expect(tabs.nth(1)).to_have_attribute("aria-selected", "true")
        await expect(preview.locator("[data-demo-page]")).to_have_text("Page: pricing")
        # …and a link in the preview opens the page it names. The click is dispatched on the
        # link: the preview is scaled into the card, where the pointer's hit point is not
        # what this test is about.
        await preview.locator('[data-demo-site] a[href="index.html"]').dispatch_event("click")
        await expect(preview.locator("[data-demo-page]")).to_have_text("Page: index")
        await expect(tabs.nth(0)).to_have_attribute("aria-selected", "true")
        # The option downloads as the gateway's zip of the whole site.
        download_button = page.get_by_test_id("variant-0-download")
        await expect(download_button).to_have_attribute("title", "Download the site (zip)")
        async with page.expect_download() as caught:
            await download_button.click()
        download = await caught.value
        saved = tmp_path / download.suggested_filename
        await download.save_as(saved)
        # …and for use with no network, with the CDN runtimes its pages load beside them.
        async with page.expect_download() as caught:
            await page.get_by_test_id("variant-0-download-offline").click()
        offline = await caught.value
        bundled = tmp_path / offline.suggested_filename
        await offline.save_as(bundled)
        [(params, _)] = sockets.used()
    assert saved.name == "site.zip"
    with zipfile.ZipFile(saved) as archive:
        assert sorted(archive.namelist()) == ["index.html", "pricing.html", "site.css"]
    assert bundled.name == "site-offline.zip"
    with zipfile.ZipFile(bundled) as archive:
        names = set(archive.namelist())
        pricing = archive.read("pricing.html").decode()
    assert {"index.html", "pricing.html", "site.css"} < names
    assert "vendor/tailwindcss-cdn/tailwindcss.js" in names
    assert '<script src="./vendor/tailwindcss-cdn/tailwindcss.js"></script>' in pricing
    assert "cdn.tailwindcss.com" not in pricing
    assert params[0]["prompt"]["imageMeta"] == [{"page": "index"}, {"page": "pricing"}]
