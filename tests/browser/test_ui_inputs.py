"""The built-in UI's inputs and numbers in a real Chromium: a video create, the
design-system picker, tokens and cost per variant, and a web page captured by URL.

Each test drives the page as a user would and then checks the params frame the UI sent
(the upstream shape) and what the agent received. Nothing leaves the machine: the UI may
load only the gateway's own URLs, and the captured page is served on loopback and
reached through the tool worker's test allowance (`test_egress_routes`, `page.test`).
"""

from __future__ import annotations

import base64
import json
import re
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from playwright.async_api import Browser, Error, Page, WebSocket, expect

from services.agent.models import CATALOGUE
from services.agent.providers.registry import PRICES
from services.agent.settings import AgentSettings
from services.common.credentials import Credentials, Endpoint
from services.tools.settings import ToolsSettings
from tests.browser.pages import html_server, load_ui, local_page
from tests.fakes.openai_server import FakeOpenAI, TokenUsage, chat_turn, responses_turn
from tests.fakes.openai_server import Text as OText
from tests.suite import Suite, running_suite

GENERATION_TIMEOUT_MS = 30_000
PAGE = "<!DOCTYPE html><html><body><h1>Hello from a model</h1></body></html>"

pytestmark = pytest.mark.asyncio(loop_scope="module")


@dataclass
class Seen:
    """Per socket, the frames the page sent and received; and the UI's own script errors."""

    sent: list[list[dict[str, Any]]] = field(default_factory=list)
    received: list[list[dict[str, Any]]] = field(default_factory=list)
    external: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def params(self, socket: int = 0) -> dict[str, Any]:
        [params] = self.sent[socket]  # one params frame per socket, as upstream
        return params

    def check_clean(self) -> None:
        assert self.external == [], "the UI must not load anything from the internet"
        assert self.errors == []


@asynccontextmanager
async def open_ui(browser: Browser, suite: Suite) -> AsyncIterator[tuple[Page, Seen]]:
    seen = Seen()
    async with local_page(browser, suite.http_url, on_external=seen.external.append) as page:

        def on_websocket(ws: WebSocket) -> None:
            sent: list[dict[str, Any]] = []
            received: list[dict[str, Any]] = []
            seen.sent.append(sent)
            seen.received.append(received)
            ws.on("framesent", lambda payload: sent.append(json.loads(payload)))
            ws.on("framereceived", lambda payload: received.append(json.loads(payload)))

        def on_page_error(error: Error) -> None:
            if suite.http_url in (error.stack or ""):
                seen.errors.append(f"{error.message}\n{error.stack}")

        page.on("websocket", on_websocket)
        page.on("pageerror", on_page_error)
        await load_ui(page, suite.http_url + "/")
        yield page, seen


async def wait_done(page: Page, variants: int = 2) -> None:
    for i in range(variants):
        status = page.get_by_test_id(f"variant-{i}-status")
        await expect(status).to_have_attribute(
            "data-state", re.compile("complete|error|cancelled"), timeout=GENERATION_TIMEOUT_MS
        )
        # A failed option says why, in the card: put that in the test's failure.
        message = await page.get_by_test_id(f"variant-{i}-message").text_content()
        assert await status.get_attribute("data-state") == "complete", message
    await expect(page.get_by_test_id("run-status")).to_have_attribute("data-state", "done")


def tiny_mp4() -> bytes:
    """An ISO-BMFF file with only its `ftyp` and an empty `moov` box: well-formed, tiny."""
    ftyp = b"isom" + struct.pack(">I", 0x200) + b"isomiso2mp41"
    moov = b""
    return (
        struct.pack(">I", 8 + len(ftyp))
        + b"ftyp"
        + ftyp
        + struct.pack(">I", 8 + len(moov))
        + b"moov"
        + moov
    )


async def test_a_video_create_sends_the_video_as_upstream_does(
    tmp_path: Path, browser: Browser
) -> None:
    clip = tmp_path / "recording.mp4"
    clip.write_bytes(tiny_mp4())
    video_url = "data:video/mp4;base64," + base64.b64encode(clip.read_bytes()).decode()
    async with running_suite(tmp_path) as suite, open_ui(browser, suite) as (page, seen):
        await page.get_by_test_id("file-input").set_input_files(clip)
        await expect(page.get_by_test_id("video-thumb")).to_be_visible()
        await expect(page.get_by_test_id("input-mode")).to_have_attribute("data-mode", "video")
        await expect(page.get_by_test_id("input-mode")).to_have_text("Video mode")
        await page.get_by_test_id("prompt-input").fill("Match the recording")
        await page.get_by_test_id("generate-button").click()
        await wait_done(page)

        params = seen.params()
        assert params["generationType"] == "create"
        assert params["inputMode"] == "video"
        assert params["prompt"] == {
            "text": "Match the recording",
            "images": [],
            "videos": [video_url],
        }
        assert params["isAssetExtractionEnabled"] is False  # upstream forces it off for video
        [generation] = suite.agent.manager.generations()
        assert generation.request.input_mode == "video"
        assert generation.request.prompt.videos == (video_url,)
        seen.check_clean()


async def test_a_picked_design_system_travels_with_every_request(
    tmp_path: Path, browser: Browser
) -> None:
    brand = "Primary colour #ff0066. Buttons are pill-shaped. Headings use Georgia."
    async with running_suite(tmp_path) as suite:
        async with aiohttp.ClientSession() as http:
            url = suite.http_url + "/api/design-systems"
            async with http.post(url, json={"name": "Brand", "content": brand}) as response:
                assert response.status in (200, 201), await response.text()
                created = await response.json()
            async with open_ui(browser, suite) as (page, seen):
                picker = page.get_by_test_id("design-system-select")
                await expect(picker.locator("option")).to_have_text(["None", "Brand"])
                # One saved after the page loaded shows up when the picker is used.
                body = {"name": "Later", "content": "Dark mode only."}
                async with http.post(url, json=body) as response:
                    assert response.status in (200, 201)
                await picker.focus()
                await expect(picker.locator("option")).to_have_text(["None", "Brand", "Later"])
                await picker.select_option(label="Brand")

                await page.get_by_test_id("prompt-input").fill("A landing page for a bakery")
                await page.get_by_test_id("generate-button").click()
                await wait_done(page)
                await page.get_by_test_id("update-input").fill("Make the header blue")
                await page.get_by_test_id("update-button").click()
                await expect(page.get_by_test_id("version-2")).to_have_attribute(
                    "aria-current", "true"
                )
                await wait_done(page)

                assert seen.params(0)["designSystem"] == brand
                assert seen.params(1)["designSystem"] == brand
                assert seen.params(1)["generationType"] == "update"
                create, update = suite.agent.manager.generations()
                assert create.request.design_system == brand
                assert update.request.design_system == brand

                # The choice is kept in this browser; "None" sends null, as upstream.
                await page.reload()
                await expect(page.locator("html")).to_have_attribute("data-ready", "true")
                await expect(picker).to_have_value(created["id"])
                await picker.select_option(label="None")
                await page.get_by_test_id("prompt-input").fill("A pricing page")
                await page.get_by_test_id("generate-button").click()
                await wait_done(page)
                assert seen.params(2)["designSystem"] is None  # the third socket
                seen.check_clean()


def priced_openai_model() -> tuple[str, str]:
    """A catalogue id on OpenAI's Responses API whose model has a price, and its API name."""
    spec = next(s for s in CATALOGUE.values() if s.provider == "openai" and s.api_name in PRICES)
    return spec.id, spec.api_name


async def test_tokens_and_cost_per_variant_and_unpriced_models(
    tmp_path: Path, browser: Browser
) -> None:
    # A text create has four options: pinned, they alternate between a priced OpenAI
    # model and a local server the agent has no price for, all on one fake server (on
    # this module's loop, unlike conftest's fixture). Each option is one turn that
    # answers with the page, so it does not matter which option takes which reply.
    model, api_name = priced_openai_model()
    async with FakeOpenAI() as fake:
        for _ in range(2):
            # Both report cached input, counted within the prompt tokens as the APIs do.
            fake.add_response(responses_turn([OText([PAGE])], usage=TokenUsage(1000, 500, 600)))
            fake.add_chat(chat_turn([OText([PAGE])], usage=TokenUsage(800, 200, 300)))
        agent = AgentSettings(
            demo_pace_s=0.0,
            provider_max_retries=0,
            pinned_models=(model, "local:tiny"),
            local_models=("tiny",),
            local_base_url=fake.base_url,
            credentials=Credentials.of(openai=Endpoint("sk-usage-test", fake.base_url)),
        )
        async with (
            running_suite(tmp_path, agent=agent) as suite,
            open_ui(browser, suite) as (page, seen),
        ):
            await page.get_by_test_id("prompt-input").fill("A greeting page")
            await page.get_by_test_id("generate-button").click()
            await wait_done(page, variants=4)

            price = PRICES[api_name]
            cost = (400 * price.input + 600 * price.cache_read + 500 * price.output) / 1e6
            for i in (0, 2):
                priced = page.get_by_test_id(f"variant-{i}-usage")
                await expect(priced).to_have_text(f"1,500 tokens · ${cost:.4f}")
                await expect(priced).to_have_attribute("data-priced", "true")
                await expect(priced).to_have_attribute(
                    "title",
                    "1 model turn: input 400, cached 600, cache write 0, output 500 tokens;"
                    f" cost ${cost:.4f}",
                )
            for i in (1, 3):
                unpriced = page.get_by_test_id(f"variant-{i}-usage")
                await expect(unpriced).to_have_text("1,000 tokens · unpriced")
                await expect(unpriced).to_have_attribute("data-priced", "false")
                await expect(unpriced).to_have_attribute(
                    "title",
                    "1 model turn: input 500, cached 300, cache write 0, output 200 tokens;"
                    " no price is known for this model",
                )

            # The run bar totals the options, the unpriced ones said as such.
            await expect(page.get_by_test_id("run-usage")).to_have_text(
                f"5,000 tokens · ${2 * cost:.4f} + unpriced"
            )

            # What the gateway sent: one `usage` frame per model turn, per variant.
            usage = {f["variantIndex"]: f["data"] for f in seen.received[0] if f["type"] == "usage"}
            assert sorted(usage) == [0, 1, 2, 3]
            assert usage[0] == {
                "inputTokens": 400,
                "outputTokens": 500,
                "cacheReadTokens": 600,
                "cacheWriteTokens": 0,
                "totalTokens": 1500,
                "costUsd": pytest.approx(cost),
                "priced": True,
            }
            assert (usage[1]["totalTokens"], usage[1]["costUsd"], usage[1]["priced"]) == (
                1000,
                0,
                False,
            )
            seen.check_clean()


@pytest_asyncio.fixture(loop_scope="module")
async def page_server() -> AsyncIterator[int]:
    """A loopback page with a solid red header, for the tool worker's browser to capture."""
    html = (
        "<!doctype html><html><head><title>Pricing</title><style>body{margin:0}"
        "header{height:200px;background:rgb(200,30,60)}</style></head>"
        "<body><header></header><main>Plans</main></body></html>"
    )
    async with html_server(html) as port:
        yield port


async def test_a_captured_web_page_becomes_the_screenshot_input(
    tmp_path: Path, browser: Browser, page_server: int
) -> None:
    tools = ToolsSettings(
        screenshots_enabled=True, test_egress_routes={"page.test": ("127.0.0.1", page_server)}
    )
    async with (
        running_suite(tmp_path, tools=tools) as suite,
        open_ui(browser, suite) as (page, seen),
    ):
        # A loopback address is refused with the server's reason, and nothing is added.
        await page.get_by_test_id("url-input").fill(f"http://127.0.0.1:{page_server}/")
        await page.get_by_test_id("capture-button").click()
        refused = page.get_by_test_id("toast").filter(has_text="is a loopback address")
        await expect(refused).to_be_visible(timeout=GENERATION_TIMEOUT_MS)
        await expect(refused).to_contain_text("Only public web pages can be captured")
        await expect(page.get_by_test_id("capture-button")).to_have_text("Capture")
        await expect(page.get_by_test_id("screenshots").get_by_role("img")).to_have_count(0)

        # (A bare `page.test` would become https://, as upstream's; the fake page is http.)
        await page.get_by_test_id("url-input").fill("http://page.test/")
        await page.get_by_test_id("url-input").press("Enter")
        shot = page.get_by_test_id("screenshots").get_by_role("img")
        await expect(shot).to_have_count(1, timeout=GENERATION_TIMEOUT_MS)
        await expect(shot).to_have_attribute("alt", "Screenshot 1: http://page.test/")
        await expect(page.get_by_test_id("input-mode")).to_have_attribute("data-mode", "image")
        await expect(page.get_by_test_id("url-input")).to_have_value("")
        captured = await shot.get_attribute("src")
        assert captured is not None
        assert captured.startswith("data:image/png;base64,")
        # The image is the page: its header's red at the top.
        red = await page.evaluate(
            """async (src) => {
                const img = new Image();
                img.src = src;
                await img.decode();
                const canvas = new OffscreenCanvas(img.width, img.height);
                const g = canvas.getContext("2d");
                g.drawImage(img, 0, 0);
                return [img.width, ...g.getImageData(img.width / 2, 100, 1, 1).data.slice(0, 3)];
            }""",
            captured,
        )
        assert red == [1280, 200, 30, 60]

        await page.get_by_test_id("generate-button").click()
        await wait_done(page)
        params = seen.params()
        assert params["inputMode"] == "image"
        assert params["prompt"]["images"] == [captured]
        [generation] = suite.agent.manager.generations()
        assert generation.request.prompt.images == (captured,)
        seen.check_clean()
