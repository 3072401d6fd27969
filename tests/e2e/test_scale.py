"""Scale-out: 30 concurrent generations over three tool workers, one of them SIGKILLed mid-run.

Gateway, agent and three `s2c tools` workers run as real processes; the agent balances
round-robin over the workers (`S2C_TOOLS_ADDR=ipv4:a,b,c`) and retries UNAVAILABLE. Once
tool results are flowing, one worker is killed without warning: calls in flight on it fail
UNAVAILABLE and are retried on the others (safe because the tools are stateless and
idempotent by call id), so every generation still completes with the right page, and no
call's effect lands twice (each variant sees one create_file, one edit_file, and the edit
replaced its text exactly once, which it could not have done on an already edited file).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from services.agent.demo_pages import CTA_NEW, CTA_OLD, demo_page
from services.common.html import extract_html_content
from tests.processes import Service, base_env, start_service
from tests.suite import WsResult, create_params

GENERATIONS = 30
WORKERS = 3
# Tool results (of 120: 2 per variant) seen before a worker is killed.
KILL_AFTER_RESULTS = 6
# 20 ms between the demo's chunks: a generation streams ~180 chunks, about 4 s.
PACE_MS = "20"


@dataclass
class ScaleSuite:
    workers: list[Service]
    agent: Service
    gateway: Service

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.gateway.port}/generate-code"


@asynccontextmanager
async def scale_suite(data_dir: Path) -> AsyncIterator[ScaleSuite]:
    env = base_env(data_dir, {"S2C_DEMO_PACE_MS": PACE_MS, "S2C_SCREENSHOTS": "0"})
    args = ["--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"]
    started: list[Service] = []
    try:
        for result in await asyncio.gather(
            *(start_service("tools", args, env) for _ in range(WORKERS)), return_exceptions=True
        ):
            if isinstance(result, BaseException):
                raise result
            started.append(result)
        workers = list(started)
        tools_addr = "ipv4:" + ",".join(f"127.0.0.1:{w.port}" for w in workers)
        agent = await start_service("agent", args, {**env, "S2C_TOOLS_ADDR": tools_addr})
        started.append(agent)
        gateway = await start_service(
            "gateway", ["--port", "0"], {**env, "S2C_AGENT_ADDR": f"127.0.0.1:{agent.port}"}
        )
        started.append(gateway)
        yield ScaleSuite(workers, agent, gateway)
    finally:
        for service in reversed(started):
            if service.process.returncode is None:
                service.process.kill()
            await service.process.wait()


class KillSwitch:
    """Counts toolResult frames across all sockets; SIGKILLs a worker at the threshold."""

    def __init__(self, victim: Service, threshold: int) -> None:
        self._victim = victim
        self._threshold = threshold
        self.results_seen = 0
        self.results_after_kill = 0
        self.killed = False

    def on_frame(self, frame: dict[str, Any]) -> None:
        if frame["type"] != "toolResult":
            return
        if self.killed:
            self.results_after_kill += 1
            return
        self.results_seen += 1
        if self.results_seen >= self._threshold:
            self._victim.process.kill()  # SIGKILL: calls in flight on it just break
            self.killed = True


async def generate(
    session: aiohttp.ClientSession, url: str, params: dict[str, Any], switch: KillSwitch
) -> WsResult:
    result = WsResult()
    async with session.ws_connect(url, max_msg_size=0) as ws:
        await ws.send_str(json.dumps(params))
        async for message in ws:
            if message.type == aiohttp.WSMsgType.TEXT:
                frame = json.loads(message.data)
                result.frames.append(frame)
                switch.on_frame(frame)
        result.close_code = ws.close_code
    return result


def expected_page(variant: int) -> str:
    """The demo's page as create_file stores it (the HTML document extracted), after its edit."""
    page = extract_html_content(demo_page("", "html_tailwind", variant))
    assert page.count(CTA_OLD) == 1
    return page.replace(CTA_OLD, CTA_NEW, 1)


async def test_thirty_generations_survive_a_tool_worker_sigkill(tmp_path: Path) -> None:
    async with scale_suite(tmp_path) as suite:
        victim = suite.workers[0]
        switch = KillSwitch(victim, KILL_AFTER_RESULTS)
        params = create_params()
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as session:
            results = await asyncio.gather(
                *(generate(session, suite.ws_url, params, switch) for _ in range(GENERATIONS))
            )
        assert switch.killed
        assert await victim.process.wait() == -9
        # The kill really was mid-run: all but the first few tool calls came after it.
        assert switch.results_after_kill == GENERATIONS * 4 - KILL_AFTER_RESULTS
        survivors_alive = all(w.process.returncode is None for w in suite.workers[1:])
        agent_log = "".join(suite.agent.log[-20:])

    assert survivors_alive
    for number, result in enumerate(results):
        where = f"generation {number} (agent log tail:\n{agent_log})"
        assert result.close_code == 1000, where
        assert not result.of("error"), where
        assert result.frames[0] == {"type": "variantCount", "variantIndex": 0, "value": "2"}
        for variant in (0, 1):
            frames = result.variant_frames(variant)
            assert frames[-1]["type"] == "variantComplete", where
            assert not result.of("variantError", variant), where
            assert result.last_code(variant) == expected_page(variant), where
            tool_results = result.of("toolResult", variant)
            assert [f["data"]["name"] for f in tool_results] == ["create_file", "edit_file"]
            assert all(f["data"]["ok"] for f in tool_results), where
            edits = tool_results[1]["data"]["output"]["edits"]
            assert [e["replaced"] for e in edits] == [1], where
            # One toolStart per call, paired with its result by event id.
            starts = result.of("toolStart", variant)
            assert [f["eventId"] for f in starts] == [f["eventId"] for f in tool_results]
