"""A browser page is an MCP client of `/mcp` when its origin is allowed (docs/mcp.md):
the CORS preflight lets the MCP headers through and the session id is readable."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser

from services.gateway.access import AccessSettings
from services.gateway.mcp_access import McpAccess
from services.gateway.settings import GatewaySettings
from tests.browser.pages import html_server
from tests.suite import running_suite

pytestmark = pytest.mark.asyncio(loop_scope="module")
TOKEN = "mcp-browser-token-0123456789"

# initialize, its notification, then tools/list in the session: what a browser-based MCP
# client (an agent host's web UI) sends. Each answer may come as JSON or as one SSE event.
_CLIENT = """async ([url, token]) => {
    const base = {"Content-Type": "application/json",
                  "Accept": "application/json, text/event-stream",
                  "Authorization": `Bearer ${token}`};
    const post = (body, headers) => fetch(url, {method: "POST", headers: {...base, ...headers},
                                                body: JSON.stringify(body)});
    const answer = async (response) => {
        const text = await response.text();
        const data = text.split("\\n").find((line) => line.startsWith("data:"));
        return JSON.parse(data ? data.slice(5) : text);
    };
    const init = await post({jsonrpc: "2.0", id: 1, method: "initialize", params: {
        protocolVersion: "2025-06-18", capabilities: {},
        clientInfo: {name: "browser-page", version: "1"}}}, {});
    const session = init.headers.get("Mcp-Session-Id");
    const version = (await answer(init)).result.protocolVersion;
    const headers = {"Mcp-Session-Id": session, "Mcp-Protocol-Version": version};
    await post({jsonrpc: "2.0", method: "notifications/initialized"}, headers);
    const tools = await answer(await post({jsonrpc: "2.0", id: 2, method: "tools/list"}, headers));
    return {session, names: tools.result.tools.map((tool) => tool.name).sort()};
}"""


@pytest_asyncio.fixture(loop_scope="module")
async def page_origin() -> AsyncIterator[str]:
    """Another origin than the gateway's: a blank page on its own port."""
    async with html_server("<!doctype html><title>host</title>") as port:
        yield f"http://127.0.0.1:{port}"


async def test_a_page_of_an_allowed_origin_lists_the_tools(
    tmp_path: Path, browser: Browser, page_origin: str
) -> None:
    gateway = GatewaySettings(
        access=AccessSettings(allowed_origins=(page_origin,)), mcp=McpAccess(token=TOKEN)
    )
    async with running_suite(tmp_path, gateway=gateway) as suite:
        context = await browser.new_context()
        try:
            page = await context.new_page()
            await page.goto(page_origin)
            seen = await page.evaluate(_CLIENT, [f"{suite.http_url}/mcp", TOKEN])
        finally:
            await context.close()
    assert seen["session"]
    assert {"generate_page", "update_page", "list_models"} <= set(seen["names"])
