"""A tool worker whose browser cannot launch says so: in its gRPC health, its metrics, its
ListTools answer, the gateway's /healthz ("degraded"), /api/health and /api/capabilities
(why), and each variant's status line, while every other tool (and the generation) goes on.

The host has a working Chromium, so the broken one is staged: S2C_CHROMIUM_PATH names an
executable that exits at once, as a browser missing a library does.
"""

from __future__ import annotations

import asyncio
import logging
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest
import pytest_asyncio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from s2c.tools.v1 import tool_service_pb2 as tpb
from s2c.tools.v1 import tool_service_pb2_grpc as tpb_grpc

from services.agent.status_line import TOOL_UNAVAILABLE
from services.common.metrics import render
from services.tools.browser_health import HEALTH_SERVICE, BrowserHealth
from services.tools.metrics import ToolsMetrics
from services.tools.settings import ToolsSettings
from tests.deploy.healthcheck import run_healthcheck
from tests.suite import Suite, create_params, run_ws, running_suite

Status = health_pb2.HealthCheckResponse


@pytest.fixture
def broken_chromium(tmp_path: Path) -> Path:
    path = tmp_path / "chromium"
    path.write_text("#!/bin/sh\necho 'error while loading shared libraries' >&2\nexit 127\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest_asyncio.fixture
async def suite(tmp_path: Path, broken_chromium: Path) -> AsyncIterator[Suite]:
    tools = ToolsSettings.from_env({"S2C_CHROMIUM_PATH": str(broken_chromium)})
    async with running_suite(tmp_path, tools=tools) as suite:
        yield suite


async def browser_status(port: int, until: int) -> int:
    """The worker's browser health once it is `until` (Watch streams each change)."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        watch = health_pb2_grpc.HealthStub(channel).Watch(
            health_pb2.HealthCheckRequest(service=HEALTH_SERVICE)
        )
        async for answer in watch:
            if answer.status == until:
                watch.cancel()
                return int(answer.status)
    raise AssertionError("the health stream ended")


async def get_json(url: str) -> object:
    async with aiohttp.ClientSession() as http, http.get(url) as response:
        assert response.status == 200
        return await response.json()


async def test_a_browser_that_does_not_launch_is_reported_everywhere(
    suite: Suite, broken_chromium: Path
) -> None:
    port = suite.tools.port
    assert await browser_status(port, Status.NOT_SERVING) == Status.NOT_SERVING
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        overall = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
        listed = await tpb_grpc.ToolServiceStub(channel).ListTools(tpb.ListToolsRequest())
    # The worker still serves every other tool.
    assert overall.status == Status.SERVING
    names = [t.name for t in listed.tools]
    assert "create_file" in names
    assert "screenshot_preview" not in names
    (reason,) = listed.unavailable.values()
    assert list(listed.unavailable) == ["screenshot_preview"]
    assert str(broken_chromium) in reason
    assert "shared libraries" not in reason  # the launch error stays in the log

    metrics = render(suite.tools.worker.metrics.registry).decode()
    assert "s2c_browser_healthy 0.0" in metrics
    assert "s2c_browser_launch_failures_total 1.0" in metrics

    health: Any = await get_json(f"{suite.http_url}/api/health")
    capabilities: Any = await get_json(f"{suite.http_url}/api/capabilities")
    assert await get_json(f"{suite.http_url}/healthz") == {"status": "degraded"}
    assert health["status"] == "degraded"
    assert health["capabilities"]["unavailable"] == {"screenshot_preview": reason}
    assert capabilities["screenshot_preview"] is False
    assert capabilities["unavailable"] == {"screenshot_preview": reason}

    result = await run_ws(suite.ws_url, create_params())
    assert result.close_code == 1000
    note = TOOL_UNAVAILABLE.format(name="screenshot_preview", reason=reason)
    statuses = result.of("status")
    assert statuses
    assert all(note in frame["value"] for frame in statuses)
    assert len(result.of("variantComplete")) == len({f["variantIndex"] for f in statuses})

    # The images' probe: healthy (a restart would not bring the browser), but it says why.
    listen = f"127.0.0.1:{port}"
    code, out = await run_healthcheck("tools", "--listen", listen)
    assert (code, out.startswith(f"degraded: {HEALTH_SERVICE} is not SERVING")) == (0, True)
    code, _ = await run_healthcheck("--service", HEALTH_SERVICE, "tools", "--listen", listen)
    assert code == 1


async def test_screenshots_turned_off_degrade_nothing(tmp_path: Path) -> None:
    # As configured (S2C_SCREENSHOTS=0), not broken: no browser health, nothing unavailable.
    async with running_suite(tmp_path) as suite:
        health: Any = await get_json(f"{suite.http_url}/api/health")
        assert health["status"] == "ok"
        assert health["capabilities"]["screenshot_preview"] is False
        assert health["capabilities"]["unavailable"] == {}
        async with grpc.aio.insecure_channel(f"127.0.0.1:{suite.tools.port}") as channel:
            with pytest.raises(grpc.aio.AioRpcError) as error:
                await health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(service=HEALTH_SERVICE)
                )
        assert error.value.code() == grpc.StatusCode.NOT_FOUND


@pytest.mark.browser  # Debian's Chromium, as every other browser test uses
async def test_a_working_browser_degrades_nothing(tmp_path: Path) -> None:
    async with running_suite(tmp_path, tools=ToolsSettings()) as suite:
        port = suite.tools.port
        assert await browser_status(port, Status.SERVING) == Status.SERVING
        health: Any = await get_json(f"{suite.http_url}/api/health")
        assert health["status"] == "ok"
        assert health["capabilities"]["screenshot_preview"] is True
        assert health["capabilities"]["unavailable"] == {}
        metrics = render(suite.tools.worker.metrics.registry).decode()
        assert "s2c_browser_healthy 1.0" in metrics
        code, out = await run_healthcheck("tools", "--listen", f"127.0.0.1:{port}")
        assert (code, out) == (0, "")


async def test_health_recovers_when_a_later_launch_succeeds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    metrics = ToolsMetrics()
    health = BrowserHealth("/usr/bin/chromium", metrics)
    outcomes: list[BaseException | None] = [OSError("no libatomic.so.1"), None]

    async def probe() -> bool:
        health.launched(outcomes.pop(0))
        return health.ok is True

    caplog.set_level(logging.INFO, "services.tools.browser_health")
    watching = asyncio.create_task(health.watch(probe, retry_s=0.01))
    try:
        assert await health.wait_change(None) is False
        assert health.unavailable() == {"screenshot_preview": health.reason}
        assert await health.wait_change(False) is True  # retried, and it launched
        assert health.unavailable() == {}
    finally:
        watching.cancel()
        await asyncio.gather(watching, return_exceptions=True)
    text = render(metrics.registry).decode()
    assert "s2c_browser_healthy 1.0" in text
    assert "s2c_browser_launch_failures_total 1.0" in text
    # One line per transition, the cause with the first.
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2, messages
    assert "no libatomic.so.1" in str(caplog.records[0].__dict__.get("cause"))
