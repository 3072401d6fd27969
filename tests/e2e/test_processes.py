"""The three services as separate processes, as `s2c up` runs them."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import aiohttp

from tests.processes import running_processes
from tests.suite import create_params, run_ws

GRPCURL = str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "grpcurl")


async def grpcurl(*args: str) -> str:
    process = await asyncio.create_subprocess_exec(
        GRPCURL, "-plaintext", *args, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await process.communicate()
    assert process.returncode == 0
    return out.decode()


async def test_three_processes_end_to_end_with_reflection_health_and_sigterm(
    tmp_path: Path,
) -> None:
    async with running_processes(tmp_path) as suite:
        result = await run_ws(suite.ws_url, create_params())
        assert result.close_code == 1000
        for variant in (0, 1):
            frames = result.variant_frames(variant)
            assert frames[-1]["type"] == "variantComplete"
            final = result.last_code(variant)
            assert final.startswith("<!DOCTYPE html>")
            assert final.rstrip().endswith("</html>")
            tools = [f["data"]["name"] for f in frames if f["type"] == "toolResult"]
            assert tools[0] == "create_file"
            assert tools[-1] == "edit_file"

        agent_services = await grpcurl(f"127.0.0.1:{suite.agent.port}", "list")
        assert "s2c.agent.v1.AgentService" in agent_services.split()
        assert "grpc.health.v1.Health" in agent_services.split()
        tools_services = await grpcurl(f"127.0.0.1:{suite.tools.port}", "list")
        assert "s2c.tools.v1.ToolService" in tools_services.split()
        for port in (suite.agent.port, suite.tools.port):
            health = json.loads(await grpcurl(f"127.0.0.1:{port}", "grpc.health.v1.Health/Check"))
            assert health == {"status": "SERVING"}
        described = await grpcurl(
            f"127.0.0.1:{suite.agent.port}", "describe", "s2c.agent.v1.AgentService"
        )
        assert "rpc GenerateCode" in described

        base = f"http://127.0.0.1:{suite.gateway.port}"
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/healthz") as response:
                assert response.status == 200
            async with http.get(f"{base}/metrics") as response:
                metrics = await response.text()
            async with http.get(f"{base}/api/capabilities") as response:
                capabilities = await response.json()
        # The workers launch Debian's Chromium: screenshot_preview is really available.
        assert capabilities["screenshot_preview"] is True
        assert 's2c_ws_frames_total{type="setCode"}' in metrics
        assert 's2c_ws_connections_total{outcome="completed"} 1.0' in metrics

        for service in (suite.gateway, suite.agent, suite.tools):
            assert await service.stop(signal.SIGTERM) == 0, "".join(service.log[-20:])
