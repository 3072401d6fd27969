"""Cost budgets through the whole suite, with real SDKs and fake servers reporting usage.

An update with OpenAI and Anthropic keys runs [claude-opus-4-8 (medium), gpt-5.5
(high)]. The OpenAI reply pauses before its tool call until the Anthropic variant has
finished, so the Anthropic variant's cost is always known when the OpenAI variant
checks its budget: the order is fixed by events, not by timing.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp

from services.agent.settings import AgentSettings
from tests.fakes.anthropic_server import FakeAnthropic, Text, ToolUse, TurnUsage
from tests.fakes.openai_server import FakeOpenAI, FunctionCall, Pause, TokenUsage, responses_turn
from tests.fakes.openai_server import Text as OText
from tests.suite import WsResult, fake_providers, running_suite
from tests.suite import update_params as suite_update_params

OLD = "<!DOCTYPE html><html><body><h1>Old</h1></body></html>"
NEW = "<!DOCTYPE html><html><body><h1>New</h1></body></html>"
# claude-opus-4-8 input is $5 per million tokens; gpt-5.5 input $2.50.
EXPENSIVE = TurnUsage(input_tokens=1_000_000, output_tokens=0)  # $5.0000
CHEAP = TokenUsage(input=1_000, output=0)  # $0.0025
MIDDLING = TokenUsage(input=500_000, output=0)  # $1.2500


def update_params() -> dict[str, Any]:
    return suite_update_params(OLD, openAiApiKey="sk-openai-test", anthropicApiKey="sk-ant-test")


def agent_settings(openai: FakeOpenAI, anthropic: FakeAnthropic) -> AgentSettings:
    return fake_providers(openai=openai.base_url, anthropic=anthropic.base_url)


def script_openai(fake: FakeOpenAI, usage: TokenUsage) -> None:
    create = json.dumps({"path": "index.html", "content": NEW})
    fake.add_response(
        responses_turn(
            [OText(["Writing it."]), Pause(), FunctionCall("call_1", "create_file", create)],
            usage=usage,
        ),
        responses_turn([OText(["Done."])], usage=CHEAP, response_id="resp_2"),
    )


async def release_once_paused(openai: FakeOpenAI) -> None:
    # `release` frees only a reply paused now: on a loaded machine variant 0 can finish
    # before the OpenAI reply reaches its pause, and a release then would be lost.
    await openai.stream_paused.wait()
    openai.release()


async def run_releasing_openai(url: str, openai: FakeOpenAI) -> WsResult:
    """Runs one update; lets the OpenAI reply go on once variant 0 has finished."""
    result = WsResult()
    releases: list[asyncio.Task[None]] = []
    async with aiohttp.ClientSession() as session, session.ws_connect(url) as ws:
        await ws.send_str(json.dumps(update_params()))
        async for message in ws:
            frame = json.loads(message.data)
            result.frames.append(frame)
            if frame.get("variantIndex") == 0 and frame["type"] in (
                "variantComplete",
                "variantError",
            ):
                releases.append(asyncio.create_task(release_once_paused(openai)))
        result.close_code = ws.close_code
    await asyncio.gather(*releases)
    return result


async def test_one_expensive_variant_stops_only_itself(
    tmp_path: Path, fake_openai: FakeOpenAI, fake_anthropic: FakeAnthropic
) -> None:
    create = {"path": "index.html", "content": NEW}
    fake_anthropic.add_turn(ToolUse.of("toolu_1", "create_file", create), usage=EXPENSIVE)
    script_openai(fake_openai, CHEAP)
    agent = replace(agent_settings(fake_openai, fake_anthropic), max_cost_usd=1.0)
    async with running_suite(tmp_path, agent=agent) as suite:
        result = await run_releasing_openai(suite.ws_url, fake_openai)

    assert result.of("variantError") == [
        {
            "type": "variantError",
            "variantIndex": 0,
            "value": "Stopped: this variant has cost $5.0000, over the budget of $1.0000 "
            "per variant (GENERATION_MAX_COST_USD).",
        }
    ]
    assert result.of("toolResult", 0) == []  # stopped before its tool ran
    assert len(fake_anthropic.requests) == 1
    assert [f["data"]["name"] for f in result.of("toolResult", 1)] == ["create_file"]
    assert len(result.of("variantComplete", 1)) == 1
    assert result.last_code(1) == NEW
    assert result.close_code == 1000


async def test_the_generation_wide_cap_stops_the_variant_that_crosses_it(
    tmp_path: Path, fake_openai: FakeOpenAI, fake_anthropic: FakeAnthropic
) -> None:
    create = {"path": "index.html", "content": NEW}
    fake_anthropic.add_turn(ToolUse.of("toolu_1", "create_file", create), usage=EXPENSIVE)
    fake_anthropic.add_turn(Text.of("Done."), usage=TurnUsage(input_tokens=0, output_tokens=0))
    script_openai(fake_openai, MIDDLING)
    # Neither variant is over the per-variant budget; together they pass the cap.
    agent = replace(
        agent_settings(fake_openai, fake_anthropic), max_cost_usd=10.0, max_total_cost_usd=6.0
    )
    async with running_suite(tmp_path, agent=agent) as suite:
        result = await run_releasing_openai(suite.ws_url, fake_openai)

    assert len(result.of("variantComplete", 0)) == 1
    assert result.of("variantError") == [
        {
            "type": "variantError",
            "variantIndex": 1,
            "value": "Stopped: this generation's variants have cost $6.2500 together, over "
            "the budget of $6.0000 (S2C_GENERATION_MAX_TOTAL_COST_USD).",
        }
    ]
    assert result.of("toolResult", 1) == []
    assert len(fake_openai.requests) == 1
    assert result.close_code == 1000


def test_the_total_cap_is_read_from_the_environment_and_off_by_default() -> None:
    assert AgentSettings.from_env({}).max_total_cost_usd is None
    env = {"GENERATION_MAX_COST_USD": "0.5", "S2C_GENERATION_MAX_TOTAL_COST_USD": "2"}
    settings = AgentSettings.from_env(env)
    assert (settings.max_cost_usd, settings.max_total_cost_usd) == (0.5, 2.0)
