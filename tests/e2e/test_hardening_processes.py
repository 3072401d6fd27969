"""Issue 13's items 3, 9 and 10 replayed against real processes, as an attacker would.

The in-process tests pin each rule; these show that the running gateway, agent and tool
worker apply it through their public ports.
"""

from __future__ import annotations

from pathlib import Path

import aiohttp

from tests.processes import base_env, running_processes, start_service
from tests.suite import close_once_coding, create_params, recording_tools, run_ws

REQUEST_KEYS = {
    "openAiApiKey": "sk-REQUEST-openai-least-privilege-3e9d1a7c5b",
    "anthropicApiKey": "sk-ant-REQUEST-anthropic-least-privilege-8c2f",
    "geminiApiKey": "AIza-REQUEST-gemini-least-privilege-6b1d",
    "replicateApiKey": "r8_REQUEST-replicate-least-privilege-0f7a",
}


async def test_design_systems_are_bounded_and_refuse_lone_surrogates(tmp_path: Path) -> None:
    env = {"S2C_DESIGN_SYSTEMS_MAX_COUNT": "2", "S2C_DESIGN_SYSTEM_MAX_BYTES": "1000"}
    async with running_processes(tmp_path, env) as suite:
        url = f"http://127.0.0.1:{suite.gateway.port}/api/design-systems"
        async with aiohttp.ClientSession() as session:
            for name in ("One", "Two"):
                async with session.post(url, json={"name": name, "content": "x"}) as response:
                    assert response.status in (200, 201)
            async with session.post(url, json={"name": "Three", "content": "x"}) as response:
                assert response.status == 413
                assert "2" in (await response.json())["detail"]
            async with session.post(url, json={"name": "Big", "content": "x" * 5000}) as response:
                assert response.status == 413
            raw = '{"name": "Bad \\ud800 name", "content": "x"}'
            headers = {"Content-Type": "application/json"}
            async with session.post(url, data=raw, headers=headers) as response:
                assert response.status == 400
                assert "lone surrogate" in (await response.json())["detail"]
            async with session.get(url) as response:
                listed = await response.json()
    assert sorted(system["name"] for system in listed) == ["One", "Two"]


async def test_a_cancel_close_is_echoed_as_4333(tmp_path: Path) -> None:
    # A paced demo model, so the generation is surely running when the browser leaves.
    async with running_processes(tmp_path, {"S2C_DEMO_PACE_MS": "50"}) as suite:
        # The upstream UI shows its "cancelled" toast only for an echoed 4333.
        assert await close_once_coding(suite.ws_url, 4333) == 4333
        cancelled = await suite.agent.wait_for_log(
            lambda record: (
                record.get("msg") == "generation finished" and record.get("status") == "cancelled"
            )
        )
    assert cancelled["status"] == "cancelled"


async def test_browser_model_keys_never_reach_a_tool_worker_process(tmp_path: Path) -> None:
    env = {**base_env(tmp_path), "S2C_MODELS": "demo"}
    tools = await start_service("tools", ["--listen", "127.0.0.1:0"], env)
    async with recording_tools(tools.port) as (recorder, port):
        agent = await start_service(
            "agent", ["--listen", "127.0.0.1:0"], {**env, "S2C_TOOLS_ADDR": f"127.0.0.1:{port}"}
        )
        gateway = await start_service(
            "gateway", ["--port", "0"], {**env, "S2C_AGENT_ADDR": f"127.0.0.1:{agent.port}"}
        )
        try:
            url = f"ws://127.0.0.1:{gateway.port}/generate-code"
            result = await run_ws(url, create_params(**REQUEST_KEYS))
        finally:
            for service in (gateway, agent, tools):
                service.process.kill()
                await service.process.wait()
    assert result.close_code == 1000, result.frames
    assert result.of("variantComplete")
    assert recorder.seen, "the agent never called the tool worker"
    sent = [dict(c.providers) for _, c in recorder.seen]
    assert all(set(providers) <= {"gemini", "replicate"} for providers in sent), sent
    # The tool keys the browser sent still reach the worker: only model keys are withheld.
    assert any(
        p["replicate"].api_key == REQUEST_KEYS["replicateApiKey"] for p in sent if "replicate" in p
    )
    wire = b"".join(c.SerializeToString() for _, c in recorder.seen)
    for name in ("openAiApiKey", "anthropicApiKey"):
        assert REQUEST_KEYS[name].encode() not in wire
