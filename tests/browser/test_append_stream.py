"""The built-in UI reads its code as appends: a real generation in Chromium, the demo model
streaming `create_file`, and not one whole-file `setCode` until that tool has finished.

The page must still end on the agent's code for every variant, in its code view and its
preview; the frames it received say how the code got there. The socket is compressed
(permessage-deflate, which Chromium offers and aiohttp accepts), as bench/ui_stream.py
assumes for its deflated bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, expect

from services.agent.settings import AgentSettings
from tests.browser.test_reconnect import generate, settled_page, ui
from tests.suite import running_suite

pytestmark = pytest.mark.asyncio(loop_scope="module")

# Slow enough that create_file's content reaches the gateway over many agent ticks.
DEMO_PACE_S = 0.01


def split_at_create_file_result(
    frames: list[dict[str, Any]], variant: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The variant's frames before create_file's toolResult, and from it on."""
    mine = [f for f in frames if f.get("variantIndex") == variant]
    end = next(
        i
        for i, f in enumerate(mine)
        if f["type"] == "toolResult" and f["data"]["name"] == "create_file"
    )
    return mine[:end], mine[end:]


async def test_the_ui_builds_the_page_from_appends(tmp_path: Path, browser: Browser) -> None:
    async with running_suite(tmp_path, agent=AgentSettings(demo_pace_s=DEMO_PACE_S)) as suite:
        async with ui(browser, suite.http_url) as (page, sockets):
            # What the handshake agreed on: bench/ui_stream.py counts deflated bytes too.
            handshakes: list[dict[str, Any]] = []
            cdp = await page.context.new_cdp_session(page)
            cdp.on("Network.webSocketHandshakeResponseReceived", lambda e: handshakes.append(e))
            await cdp.send("Network.enable")
            await generate(page)
            shown = await settled_page(page)
            for i in range(2):
                preview = page.get_by_test_id(f"variant-{i}-preview").content_frame
                await expect(preview.locator(f'body[data-demo-variant="{i}"]')).to_have_count(1)
            [(params, received)] = sockets.used()
        [generation] = suite.agent.manager.generations()

    assert params[0]["codeStream"] == "append"
    [handshake] = handshakes
    headers = {k.lower(): v for k, v in handshake["response"]["headers"].items()}
    assert headers["sec-websocket-extensions"].startswith("permessage-deflate")
    assert generation.status == "completed"
    for i, variant in enumerate(shown):
        assert variant["code"] == generation.variants[i].code
        streaming, later = split_at_create_file_result(received, i)
        types = [f["type"] for f in streaming]
        assert "setCode" not in types
        appends = [f["value"] for f in streaming if f["type"] == "appendCode"]
        assert len(appends) > 1  # a live preview, not the file at the end
        # create_file's whole file arrived as appends (its snapshot added nothing), and
        # the one whole file is edit_file's, after it.
        assert "".join(appends).rstrip().endswith("</html>")
        whole = [f["value"] for f in later if f["type"] == "setCode"]
        assert whole[-1] == generation.variants[i].code
