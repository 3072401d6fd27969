"""The built-in web UI in a real Chromium, against the in-process suite and the demo model.

The UI is driven like a user would: upload a screenshot or type a prompt, generate, watch
the variants build live, follow up on one, cancel. Nothing may be fetched from the
internet: every non-local request is aborted, and any the UI itself makes fails the test
(the preview pages' own CDN includes are theirs, not the UI's).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw
from playwright.async_api import (
    Browser,
    Error,
    Page,
    WebSocket,
    expect,
)

from services.agent.generation import Generation
from services.agent.settings import AgentSettings
from services.common.credentials import CREDENTIALS
from services.gateway.access import AccessSettings
from services.gateway.settings import GatewaySettings
from services.tools.settings import ToolsSettings
from tests.browser.pages import CHROMIUM_ARGS as BASE_CHROMIUM_ARGS
from tests.browser.pages import load_ui, local_page
from tests.suite import Suite, running_suite

CHROMIUM_ARGS = [
    *BASE_CHROMIUM_ARGS,
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
DOCS_SCREENSHOTS = REPO / "docs" / "screenshots"
GENERATION_TIMEOUT_MS = 30_000
TOKEN = "ui-test-token-0123456789"
KEY_FIELDS = (*(s.browser_key for s in CREDENTIALS), "openAiBaseURL")


@dataclass
class Recorder:
    """What the page did: frames it sent per socket, non-local requests, script errors."""

    sockets: list[list[dict[str, Any]]] = field(default_factory=list)
    external: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def check_clean(self) -> None:
        assert self.external == [], "the UI must not load anything from the internet"
        assert self.errors == []
        # The upstream protocol: exactly one params frame per socket, nothing else.
        assert [len(frames) for frames in self.sockets] == [1] * len(self.sockets)


# One Chromium for the module (each test gets its own context), on the module's loop.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@asynccontextmanager
async def open_ui(
    browser: Browser, suite: Suite, *, query: str = ""
) -> AsyncIterator[tuple[Page, Recorder]]:
    """The UI in a fresh browser context (own storage), closed afterwards."""
    recorder = Recorder()
    async with local_page(
        browser, suite.http_url, on_external=recorder.external.append, accept_downloads=True
    ) as page:

        def on_websocket(ws: WebSocket) -> None:
            frames: list[dict[str, Any]] = []
            recorder.sockets.append(frames)
            ws.on("framesent", lambda payload: frames.append(json.loads(payload)))

        page.on("websocket", on_websocket)

        def on_page_error(error: Error) -> None:
            # Preview pages throw too (their CDN scripts are blocked here); only the UI's
            # own modules count.
            if suite.http_url in (error.stack or ""):
                recorder.errors.append(f"{error.message}\n{error.stack}")

        page.on("pageerror", on_page_error)
        await load_ui(page, suite.http_url + "/" + query)
        yield page, recorder


def screenshot_png(path: Path) -> Path:
    """A small mock-up of a landing page, as a user's screenshot."""
    image = Image.new("RGB", (640, 400), "#f8fafc")
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, 640, 48), fill="#1e293b")
    draw.rectangle((180, 110, 460, 150), fill="#4f46e5")
    draw.rectangle((240, 180, 400, 200), fill="#94a3b8")
    for x in (60, 250, 440):
        draw.rounded_rectangle((x, 260, x + 140, 360), radius=12, fill="#e2e8f0")
    image.save(path)
    return path


async def save_screenshot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    # Clicks scroll the page; a full-page capture reads best from the top.
    await page.evaluate("window.scrollTo(0, 0)")
    await page.screenshot(path=path, full_page=True)
    return path


async def wait_complete(page: Page, variants: int = 2) -> None:
    for i in range(variants):
        await expect(page.get_by_test_id(f"variant-{i}-status")).to_have_attribute(
            "data-state", "complete", timeout=GENERATION_TIMEOUT_MS
        )


def generations(suite: Suite) -> list[Generation]:
    return suite.agent.manager.generations()


async def test_create_from_screenshot_streams_previews_and_activity(
    tmp_path: Path, browser: Browser
) -> None:
    png = screenshot_png(tmp_path / "screenshot.png")
    # A paced demo model, and screenshot_preview on, so the feed shows every kind of step.
    agent = AgentSettings(demo_pace_s=0.02)
    tools = ToolsSettings(screenshots_enabled=True)
    async with (
        running_suite(tmp_path, agent=agent, tools=tools) as suite,
        open_ui(browser, suite) as (page, recorder),
    ):
        await expect(page.get_by_test_id("empty-state")).to_be_visible()
        await page.get_by_test_id("file-input").set_input_files(png)
        await expect(page.get_by_test_id("input-mode")).to_have_attribute("data-mode", "image")
        await expect(page.get_by_test_id("screenshots").get_by_role("img")).to_have_count(1)
        await page.get_by_label("Stack").select_option("html_css")
        await page.get_by_test_id("generate-button").click()

        # The preview renders while the page is still being written.
        await expect(page.get_by_test_id("cancel-button")).to_be_visible()
        preview = page.get_by_test_id("variant-0-preview").content_frame
        await expect(preview.locator("h1")).to_be_visible(timeout=GENERATION_TIMEOUT_MS)
        await expect(page.get_by_test_id("variant-0-status")).to_have_attribute(
            "data-state", "generating"
        )
        await save_screenshot(page, "ui-generating.png")

        await wait_complete(page)
        await expect(page.get_by_test_id("run-status")).to_have_attribute("data-state", "done")
        await expect(page.get_by_test_id("cancel-button")).to_be_hidden()
        for i in range(2):
            frame = page.get_by_test_id(f"variant-{i}-preview").content_frame
            await expect(frame.locator(f'body[data-demo-variant="{i}"]')).to_have_count(1)
            await expect(frame.get_by_text("Start your free 14-day trial")).to_be_visible()
            await expect(page.get_by_test_id(f"variant-{i}-model")).to_have_text("demo")

            activity = page.get_by_test_id(f"activity-{i}")
            for tool in ("create_file", "screenshot_preview", "edit_file"):
                step = activity.locator(f'[data-tool="{tool}"]')
                await expect(step).to_have_attribute("data-state", "ok")
                await expect(step.get_by_test_id("tool-state")).to_have_text("ok")
                await expect(step.get_by_test_id("tool-time")).to_have_text(
                    re.compile(r"^\d+(\.\d)?s$")
                )
            create = activity.locator('[data-tool="create_file"]')
            await expect(create.get_by_test_id("tool-input")).to_contain_text("index.html")
            await expect(create.get_by_test_id("tool-output")).to_contain_text("chars")
            edit = activity.locator('[data-tool="edit_file"]')
            await expect(edit.get_by_test_id("edit-diff")).to_contain_text("Get started today")
            await expect(edit.get_by_test_id("edit-diff")).to_contain_text(
                "Start your free 14-day trial"
            )
            await expect(edit.get_by_test_id("tool-output")).to_have_text("replaced 1 occurrence")
            shots = activity.locator('[data-tool="screenshot_preview"]').get_by_role("img")
            await expect(shots).to_have_count(2)
            await expect(activity.locator('[data-kind="thinking"]').first).to_be_visible()
            await expect(activity.locator('[data-kind="assistant"]').last).to_contain_text("Built")
            await expect(page.get_by_test_id(f"activity-{i}-summary")).to_contain_text(
                "Worked through"
            )

        async with page.expect_download() as download_info:
            await page.get_by_test_id("variant-0-download").click()
        download = await download_info.value
        assert download.suggested_filename == "index.html"
        downloaded = await asyncio.to_thread(Path(await download.path()).read_text)
        assert "Start your free 14-day trial" in downloaded

        # For the picture: option 2's feed scrolled to its screenshot_preview step.
        screenshot_step = page.get_by_test_id("activity-1").locator(
            '[data-tool="screenshot_preview"]'
        )
        await screenshot_step.evaluate("step => step.scrollIntoView({block: 'start'})")
        final = await save_screenshot(page, "ui-complete.png")
        if os.environ.get("S2C_UPDATE_SCREENSHOTS") == "1":
            # The README's picture changes only when asked; test-artifacts/ always has it.
            DOCS_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(final, DOCS_SCREENSHOTS / "ui.png")

        [params] = recorder.sockets[0]
        assert params["generationType"] == "create"
        assert params["inputMode"] == "image"
        assert params["generatedCodeConfig"] == "html_css"
        assert params["prompt"]["text"] == ""
        assert params["prompt"]["videos"] == []
        [image] = params["prompt"]["images"]
        assert image.startswith("data:image/png;base64,")
        assert params["isImageGenerationEnabled"] is True
        assert params["isAssetExtractionEnabled"] is True
        assert {key: params[key] for key in KEY_FIELDS} == dict.fromkeys(KEY_FIELDS)
        recorder.check_clean()
        [generation] = generations(suite)
        assert generation.status == "completed"
        assert generation.request.prompt.images == (image,)


async def test_follow_up_update_on_a_selected_variant(tmp_path: Path, browser: Browser) -> None:
    # Behind a gateway token: the UI is opened once as /?token=… and keeps it for the socket.
    access = AccessSettings(token=TOKEN, max_concurrent_per_client=0, starts_per_minute=0)
    async with (
        running_suite(tmp_path, gateway=GatewaySettings(access=access)) as suite,
        open_ui(browser, suite, query=f"?token={TOKEN}") as (page, recorder),
    ):
        await expect(page).to_have_url(suite.http_url + "/")
        await page.get_by_test_id("prompt-input").fill("A landing page for a bakery")
        await expect(page.get_by_test_id("input-mode")).to_have_attribute("data-mode", "text")
        await page.get_by_test_id("stack-select").select_option("html_css")
        await page.get_by_test_id("generate-button").click()
        await wait_complete(page)

        await page.get_by_test_id("variant-1-select").click()
        await expect(page.get_by_test_id("variant-1")).to_have_class(re.compile(r"\bis-selected\b"))
        await expect(page.get_by_test_id("update-target")).to_contain_text("option 2 of v1")
        await page.get_by_test_id("update-input").fill("Make the header blue")
        await page.get_by_test_id("update-button").click()

        await expect(page.get_by_test_id("version-2")).to_have_attribute("aria-current", "true")
        await wait_complete(page)
        for i in range(2):
            frame = page.get_by_test_id(f"variant-{i}-preview").content_frame
            await expect(frame.locator("h1")).to_be_visible()
        await expect(page.get_by_test_id("run-status")).to_have_attribute("data-state", "done")

        # The update request is built exactly like upstream's, from option 2's history.
        create, update = generations(suite)
        parent_code = create.variants[1].code
        assert parent_code
        [params] = recorder.sockets[1]
        assert params["generationType"] == "update"
        assert params["inputMode"] == "text"
        assert params["generatedCodeConfig"] == "html_css"
        assert params["prompt"] == {"text": "Make the header blue", "images": [], "videos": []}
        assert params["history"] == [
            {"role": "user", "text": "A landing page for a bakery", "images": [], "videos": []},
            {"role": "assistant", "text": parent_code, "images": [], "videos": []},
            {"role": "user", "text": "Make the header blue", "images": [], "videos": []},
        ]
        assert params["fileState"] == {"path": "index.html", "content": parent_code}
        assert params["optionCodes"] == [v.code for v in create.variants]
        # ... and the agent accepted it as such.
        assert update.status == "completed"
        assert update.request.generation_type == "update"
        assert [m.role for m in update.request.history] == ["user", "assistant", "user"]
        assert update.request.file_state is not None
        assert update.request.file_state.content == parent_code

        # The first version is still there to look at.
        await page.get_by_test_id("version-1").click()
        await expect(page.get_by_test_id("variant-1")).to_have_class(re.compile(r"\bis-selected\b"))
        await expect(page.get_by_test_id("variant-1-status")).to_have_attribute(
            "data-state", "complete"
        )
        recorder.check_clean()


async def test_cancel_stops_the_generation_in_the_ui_and_on_the_server(
    tmp_path: Path, browser: Browser
) -> None:
    # A slow demo model, so the generation is surely still running when we cancel.
    async with (
        running_suite(tmp_path, agent=AgentSettings(demo_pace_s=0.05)) as suite,
        open_ui(browser, suite) as (page, recorder),
    ):
        await page.get_by_test_id("prompt-input").fill("A pricing page")
        await page.get_by_test_id("generate-button").click()
        create_step = page.get_by_test_id("activity-0").locator('[data-tool="create_file"]')
        await expect(create_step).to_have_attribute("data-state", "running")

        await page.get_by_test_id("cancel-button").click()
        for i in range(2):
            await expect(page.get_by_test_id(f"variant-{i}-status")).to_have_attribute(
                "data-state", "cancelled"
            )
        await expect(create_step).to_have_attribute("data-state", "cancelled")
        await expect(
            page.get_by_test_id("toast").filter(has_text="Code generation cancelled")
        ).to_be_visible()
        await expect(page.get_by_test_id("run-status")).to_have_attribute("data-state", "cancelled")
        await expect(page.get_by_test_id("cancel-button")).to_be_hidden()
        await expect(page.get_by_test_id("generate-button")).to_be_enabled()

        [generation] = generations(suite)
        assert generation.task is not None
        await asyncio.wait({generation.task}, timeout=10)
        assert generation.status == "cancelled"
        assert {v.status for v in generation.variants} == {"cancelled"}
        await save_screenshot(page, "ui-cancelled.png")
        recorder.check_clean()


async def test_settings_fields_are_the_servers_credential_sources(
    tmp_path: Path, browser: Browser
) -> None:
    # The fields are rendered from /api/providers (behind the token, as every API route);
    # what the user enters goes out under the upstream param names.
    access = AccessSettings(token=TOKEN, max_concurrent_per_client=0, starts_per_minute=0)
    agent = AgentSettings(demo_pace_s=0.02, provider_max_retries=0)
    with socket.socket() as closed:  # bound, not listening: the model call fails at once
        closed.bind(("127.0.0.1", 0))
        base_url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
        async with (
            running_suite(tmp_path, agent=agent, gateway=GatewaySettings(access=access)) as suite,
            open_ui(browser, suite, query=f"?token={TOKEN}") as (page, recorder),
        ):
            await page.get_by_test_id("settings-button").click()
            dialog = page.get_by_test_id("settings-dialog")
            inputs = dialog.locator("[data-credential-fields] input")
            names = await inputs.evaluate_all("els => els.map((e) => [e.name, e.type])")
            assert names == [[s.browser_key, "password"] for s in CREDENTIALS] + [
                [s.browser_base_url, "url"] for s in CREDENTIALS if s.browser_base_url
            ]
            await expect(dialog.get_by_text("Anthropic API key")).to_be_visible()
            await expect(dialog.get_by_text("image generation & editing")).to_be_visible()
            await page.get_by_test_id("setting-openAiApiKey").fill("  sk-ui-settings-test ")
            await page.get_by_test_id("setting-openAiBaseURL").fill(base_url)
            await page.get_by_test_id("settings-save").click()
            await expect(dialog).to_be_hidden()
            await expect(page.locator("#key-hint")).to_have_text("using your API key")

            await page.get_by_test_id("prompt-input").fill("A landing page for a bakery")
            await page.get_by_test_id("generate-button").click()
            runbar = page.get_by_test_id("run-status")
            await expect(runbar).to_have_attribute(
                "data-state", "failed", timeout=GENERATION_TIMEOUT_MS
            )
            # Every option failed on the unreachable server: the run bar points at their
            # own reasons, not at upstream's "Please contact support".
            await expect(runbar).to_contain_text(re.compile(r"options failed"))
            await expect(runbar).not_to_contain_text("support")
            [params] = recorder.sockets[0]
            keys = {key: params[key] for key in KEY_FIELDS}
            assert keys == {
                **dict.fromkeys(KEY_FIELDS),
                "openAiApiKey": "sk-ui-settings-test",
                "openAiBaseURL": base_url,
            }
            # The agent took the request's key with the request's base URL.
            [generation] = generations(suite)
            assert generation.request.credentials.key("openai") == "sk-ui-settings-test"
            assert generation.request.credentials.base_url("openai") == base_url

            # Saved in this browser: a reload shows them again.
            await page.reload()
            await expect(page.locator("html")).to_have_attribute("data-ready", "true")
            await page.get_by_test_id("settings-button").click()
            await expect(page.get_by_test_id("setting-openAiApiKey")).to_have_value(
                "sk-ui-settings-test"
            )
            recorder.check_clean()


async def test_the_model_picker_keeps_screenshots_off_text_only_models(
    tmp_path: Path, browser: Browser
) -> None:
    models = tmp_path / "models.toml"
    models.write_text(
        '[[endpoint]]\nname = "ollama"\nbase_url = "http://127.0.0.1:9/v1"\n'
        '[[endpoint.model]]\nid = "qwen3-vl:8b"\n'
        '[[endpoint.model]]\nid = "gemma3:1b"\nvision = false\ntools = false\n'
    )
    agent = replace(
        AgentSettings.from_env({"S2C_MODELS_FILE": str(models)}), provider_max_retries=0
    )
    async with (
        running_suite(tmp_path, agent=agent) as suite,
        open_ui(browser, suite) as (page, recorder),
    ):
        picker = page.get_by_test_id("model-select")
        offered = "els => els.map((e) => e.value)"
        await expect(picker.locator("option")).to_have_count(3)  # Automatic and both
        await page.get_by_test_id("file-input").set_input_files(
            screenshot_png(tmp_path / "shot.png")
        )
        await expect(page.get_by_test_id("input-mode")).to_have_attribute("data-mode", "image")
        await expect(picker.locator("option")).to_have_count(2)
        assert await picker.locator("option").evaluate_all(offered) == ["", "ollama:qwen3-vl:8b"]
        await picker.select_option("ollama:qwen3-vl:8b")
        await page.get_by_test_id("generate-button").click()
        await expect(page.get_by_test_id("run-status")).to_have_attribute(
            "data-state", "failed", timeout=GENERATION_TIMEOUT_MS
        )
        [params] = recorder.sockets[0]
        assert params["models"] == ["ollama:qwen3-vl:8b"]
        recorder.check_clean()
