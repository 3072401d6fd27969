"""A gateway told to stop drains (drain.py): not ready at once, no new sockets, resumable
sockets sent elsewhere with 1012, upstream ones kept until the drain limit, then an error
and 4332 with their generation cancelled. Never a close without a close frame."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from services.agent.generation import CANCELLED_BY_CLIENT
from services.agent.settings import AgentSettings
from services.gateway.drain import DRAIN_LIMIT, RESTARTING, SERVICE_RESTART
from services.gateway.keys import SOCKETS_KEY
from services.gateway.relay import APP_ERROR
from services.gateway.settings import GatewaySettings
from tests.suite import create_params, running_suite


async def coding(ws: aiohttp.ClientWebSocketResponse, frames: list[dict[str, Any]]) -> None:
    """Reads frames until the first code frame: the generation surely runs."""
    async for message in ws:
        frames.append(json.loads(message.data))
        if frames[-1]["type"] in ("setCode", "appendCode"):
            return


async def rest(
    ws: aiohttp.ClientWebSocketResponse, frames: list[dict[str, Any]]
) -> tuple[int, str]:
    """Reads frames to the close; the code and reason of the gateway's close frame."""
    while True:
        message = await ws.receive()
        if message.type == aiohttp.WSMsgType.CLOSE:
            return int(message.data), str(message.extra or "")
        assert message.type == aiohttp.WSMsgType.TEXT, message  # never a bare hang-up
        frames.append(json.loads(message.data))


async def test_a_drain_sends_resumable_sockets_on_and_cuts_upstream_ones_at_its_limit(
    tmp_path: Path,
) -> None:
    # Paced so both generations outlive the drain limit by far.
    async with running_suite(tmp_path, agent=AgentSettings(demo_pace_s=0.05)) as suite:
        assert suite.gateway is not None
        sockets = suite.gateway[SOCKETS_KEY]
        async with aiohttp.ClientSession() as session:
            assert (await session.get(f"{suite.http_url}/readyz")).status == 200
            resumable = await session.ws_connect(suite.ws_url)
            await resumable.send_str(json.dumps(create_params(resumable=True)))
            upstream = await session.ws_connect(suite.ws_url)
            await upstream.send_str(json.dumps(create_params()))
            seen: list[dict[str, Any]] = []
            await asyncio.gather(coding(resumable, seen), coding(upstream, []))
            generation_id = seen[0]["value"]

            drained = asyncio.create_task(sockets.drain(0.2))
            resumable_close = await rest(resumable, [])
            ready = await session.get(f"{suite.http_url}/readyz")
            refused = await session.get(suite.ws_url)
            upstream_frames: list[dict[str, Any]] = []
            upstream_close = await rest(upstream, upstream_frames)
            await drained

        assert resumable_close == (SERVICE_RESTART, RESTARTING)
        assert (ready.status, await ready.json()) == (503, {"status": "draining"})
        assert refused.status == 503
        assert upstream_close == (APP_ERROR, "")
        assert upstream_frames[-1] == {"type": "error", "value": DRAIN_LIMIT}
        # The upstream generation, which nobody can resume, is cancelled; the resumable
        # one runs on for its browser's re-attach through another gateway.
        by_id = {g.id: g for g in suite.agent.manager.generations()}
        resumed = by_id.pop(generation_id)
        (cut,) = by_id.values()
        assert cut.task is not None
        await asyncio.wait({cut.task})
        assert (cut.status, cut.error) == ("cancelled", CANCELLED_BY_CLIENT)
        assert resumed.status == "running"


async def test_a_drain_with_nothing_running_does_not_wait_for_its_limit(tmp_path: Path) -> None:
    async with running_suite(tmp_path) as suite:
        assert suite.gateway is not None
        # Returns (the test would time out otherwise), though the limit is 15 minutes.
        await suite.gateway[SOCKETS_KEY].drain(900.0)
        assert len(suite.gateway[SOCKETS_KEY]) == 0


def test_the_drain_limit_outlasts_the_generation_deadline_unless_set() -> None:
    assert GatewaySettings.from_env({}).drain_s == 930.0
    assert GatewaySettings.from_env({"S2C_MAX_GENERATION_S": "600"}).drain_s == 630.0
    assert GatewaySettings.from_env({"S2C_DRAIN_S": "0"}).drain_s == 0.0
    with pytest.raises(ValueError, match="S2C_DRAIN_S must be a number of seconds >= 0"):
        GatewaySettings.from_env({"S2C_DRAIN_S": "-1"})
    with pytest.raises(ValueError, match="S2C_RESUME_GRACE_S must be a number of seconds"):
        AgentSettings.from_env({"S2C_RESUME_GRACE_S": "soon"})
