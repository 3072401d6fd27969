"""A browser that closes the socket cancels the generation on the server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp

from services.agent.settings import AgentSettings
from tests.suite import close_once_coding, create_params, running_suite


async def test_client_close_4333_cancels_the_generation(tmp_path: Path) -> None:
    # A slow demo model, so the generation is surely still running when we close.
    async with running_suite(tmp_path, agent=AgentSettings(demo_pace_s=0.05)) as suite:
        # Echoed like upstream's server: the upstream UI shows "cancelled" on 4333.
        assert await close_once_coding(suite.ws_url, 4333) == 4333
        generations = suite.agent.manager.generations()
        assert len(generations) == 1
        generation = generations[0]
        assert generation.task is not None
        await asyncio.wait({generation.task}, timeout=10)
        assert generation.status == "cancelled"
        assert {v.status for v in generation.variants} == {"cancelled"}


async def test_any_client_close_code_is_echoed(tmp_path: Path) -> None:
    async with running_suite(tmp_path, agent=AgentSettings(demo_pace_s=0.05)) as suite:
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(suite.ws_url) as ws:
                await ws.send_str(json.dumps(create_params()))
                await ws.receive()
                await ws.close(code=4000)
                assert ws.close_code == 4000
            async with session.ws_connect(suite.ws_url) as idle:
                # Closed before sending params: still answered with the client's code.
                await idle.close(code=4333)
                assert idle.close_code == 4333


async def test_capabilities_come_from_the_tool_workers(tmp_path: Path) -> None:
    async with running_suite(tmp_path) as suite:
        async with aiohttp.ClientSession() as session:
            url = f"{suite.http_url}/api/capabilities"
            async with session.get(url) as response:
                body = await response.json()
    # The harness runs workers without Chromium screenshots and without image keys.
    assert body == {
        "screenshot_preview": False,
        "tools": ["create_file", "edit_file", "save_assets", "retrieve_option"],
        "unavailable": {},  # screenshots off is configuration, not a fault
    }
