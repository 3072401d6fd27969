"""A react_vite project in the built-in UI, written by the demo model: the preview shows
the page the tool workers built, the code view lists the project's files as a tree with
the build's status and opens each file, and the option downloads as a Vite project."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from tests.browser.test_reconnect import GENERATION_TIMEOUT_MS, ui
from tests.suite import running_suite

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_a_react_project_previews_lists_its_files_and_downloads(
    tmp_path: Path, browser: Browser
) -> None:
    async with running_suite(tmp_path) as suite, ui(browser, suite.http_url) as (page, _):
        await page.get_by_test_id("prompt-input").fill("A launch page for Acme")
        await page.get_by_test_id("stack-select").select_option("react_vite")
        await page.get_by_test_id("generate-button").click()
        await expect(page.get_by_test_id("variant-0-status")).to_have_attribute(
            "data-state", "complete", timeout=GENERATION_TIMEOUT_MS
        )
        preview = page.get_by_test_id("variant-0-preview").content_frame
        # The built page: React rendered the components, Tailwind styled them.
        await expect(preview.locator("[data-demo-title]")).to_have_text("A launch page for Acme")
        await expect(preview.locator("header")).to_have_css("background-color", "rgb(15, 23, 42)")
        card = page.get_by_test_id("variant-0")
        await card.locator('.segmented-view button[data-value="code"]').click()
        files = page.get_by_test_id("variant-0-files")
        await expect(files.locator(".build-status")).to_have_text(
            "Built: the preview shows this build."
        )
        await expect(files.locator(".tree-file")).to_have_text(
            [
                "index.html (built)",
                "Features.tsx",
                "Footer.tsx",
                "Header.tsx",
                "App.tsx",
                "index.css",
                "main.tsx",
                "index.html",
            ]
        )
        await files.get_by_role("button", name="Header.tsx").click()
        await expect(page.get_by_test_id("variant-0-code")).to_contain_text(
            'import { Sparkles } from "lucide-react";'
        )
        async with page.expect_download() as caught:
            await page.get_by_test_id("variant-0-download").click()
        download = await caught.value
        saved = tmp_path / download.suggested_filename
        await download.save_as(saved)
    assert saved.name == "react-app.zip"
    with zipfile.ZipFile(saved) as archive:
        names = set(archive.namelist())
    assert {"package.json", "vite.config.ts", "dist/index.html", "src/App.tsx"} <= names
