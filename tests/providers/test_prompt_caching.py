"""Caching by design: what each provider's request carries, asserted on the body the fake
received, and the cached tokens the fakes' emulated caches report back through the SDKs."""

from __future__ import annotations

from typing import Any

import pytest

from services.agent.domain import FileState, GenerationRequest, HistoryMessage
from services.agent.prompts import build_prompt_messages
from services.agent.providers.anthropic import AnthropicSession
from services.agent.providers.base import (
    PromptMessage,
    ProviderName,
    SessionConfig,
    StreamEvent,
    ToolSpec,
)
from services.agent.providers.gemini import GeminiSession
from services.agent.providers.openai_chat import OpenAIChatSession
from services.agent.providers.openai_responses import OpenAIResponsesSession
from services.agent.providers.streaming import lineage_cache_key
from tests.fakes import anthropic_server as fa
from tests.fakes import gemini_server as fg
from tests.fakes import openai_server as fo

PAGE = "<!DOCTYPE html><html><body>" + "<p>a row of the page</p>" * 400 + "</body></html>"
EDITED = PAGE.replace("</body>", "<footer>f</footer></body>")
TOOLS = (ToolSpec("edit_file", "Edit the file.", {"type": "object", "properties": {}}),)


def update_messages(root: str = "") -> tuple[PromptMessage, ...]:
    history = (
        HistoryMessage("user", root),
        HistoryMessage("assistant", PAGE),
        HistoryMessage("user", "Add a footer"),
        HistoryMessage("assistant", EDITED),
        HistoryMessage("user", "Make it blue"),
    )
    request = GenerationRequest(
        "g", "update", history=history, file_state=FileState("index.html", EDITED)
    )
    return tuple(build_prompt_messages(request, tools={"edit_file"}))


def config(base_url: str, messages: tuple[PromptMessage, ...], api_name: str) -> SessionConfig:
    return SessionConfig(
        provider=ProviderName("Fake", "KEY"),
        model_id=api_name,
        api_name=api_name,
        effort=None,
        api_key="test-key",
        base_url=base_url,
        messages=messages,
        tools=TOOLS,
        max_retries=0,
    )


async def ignore(event: StreamEvent) -> None:
    del event


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")


def test_the_lineage_key_is_shared_by_variants_and_updates_of_one_root() -> None:
    first, second = update_messages(), update_messages()
    assert lineage_cache_key(first) == lineage_cache_key(second)
    assert lineage_cache_key(first) != lineage_cache_key(update_messages("another page"))
    # A later turn (more messages) of the same lineage keeps the key.
    longer = (*first, PromptMessage("assistant", "ok"))
    assert lineage_cache_key(longer) == lineage_cache_key(first)


@pytest.mark.parametrize("route", ["responses", "chat"])
async def test_openai_requests_carry_the_lineage_key_and_the_cache_answers(route: str) -> None:
    messages = update_messages()
    async with fo.FakeOpenAI(emulate_cache=True) as fake:
        for _ in range(2):  # two variants of one generation
            if route == "responses":
                fake.add_response(fo.responses_turn([fo.Text(["ok"])]))
            else:
                fake.add_chat(fo.chat_turn([fo.Text(["ok"])], usage=fo.TokenUsage()))
        cfg = config(fake.base_url, messages, "gpt-5.5")
        usages = []
        for _ in range(2):
            session: OpenAIResponsesSession | OpenAIChatSession = (
                OpenAIResponsesSession(cfg) if route == "responses" else OpenAIChatSession(cfg)
            )
            usages.append((await session.stream_turn(ignore)).usage)
            await session.close()
        naive = OpenAIResponsesSession if route == "responses" else OpenAIChatSession
        fake.add_response(fo.responses_turn([fo.Text(["ok"])]))
        fake.add_chat(fo.chat_turn([fo.Text(["ok"])], usage=fo.TokenUsage()))
        baseline = naive(cfg, prompt_caching=False)
        await baseline.stream_turn(ignore)
        await baseline.close()
    keys = [r.json.get("prompt_cache_key") for r in fake.requests]
    assert keys == [lineage_cache_key(messages)] * 2 + [None]
    assert usages[0].cache_read_tokens == 0
    # The second variant finds the whole prompt cached, in 128-token steps past 1024.
    sent = usages[1].input_tokens + usages[1].cache_read_tokens
    assert usages[1].cache_read_tokens >= 1024
    assert (usages[1].cache_read_tokens - 1024) % 128 == 0
    assert sent - usages[1].cache_read_tokens < 128


async def test_anthropic_breakpoints_sit_on_system_tail_and_previous_user_message() -> None:
    fake = fa.FakeAnthropic(emulate_cache=True)
    await fake.start()
    try:
        messages = update_messages()
        fake.add_turn(fa.Text.of("ok"), fa.Text.of("ok"))
        fake.add_turn(fa.Text.of("ok"))
        fake.add_turn(fa.Text.of("ok"))
        cfg = config(fake.base_url, messages, "claude-opus-4-8")
        usages = []
        for caching in (True, True, False):
            session = AnthropicSession(cfg, prompt_caching=caching)
            usages.append((await session.stream_turn(ignore)).usage)
            await session.close()
    finally:
        await fake.stop()
    body = fake.requests[0].body
    assert "cache_control" not in body
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    marked = [
        i
        for i, message in enumerate(body["messages"])
        if any("cache_control" in block for block in _blocks(message))
    ]
    assert marked == [len(body["messages"]) - 3, len(body["messages"]) - 1]
    assert body["messages"][-1]["role"] == body["messages"][-3]["role"] == "user"
    assert _count_marks(body) <= 4
    # First variant writes the prefix, the second reads all of it, the baseline neither.
    assert usages[0].cache_read_tokens == 0
    assert usages[0].cache_write_tokens > 1024
    assert usages[1].cache_read_tokens == usages[0].cache_write_tokens
    assert usages[1].input_tokens == usages[0].input_tokens
    assert usages[2].cache_read_tokens == usages[2].cache_write_tokens == 0
    assert _count_marks(fake.requests[2].body) == 0


async def test_gemini_sends_the_stable_part_first_and_the_file_last() -> None:
    fake = fg.FakeGemini(emulate_cache=True)
    await fake.start()
    try:
        fake.add_turn(fg.Say("ok"))
        fake.add_turn(fg.Say("ok"))
        cfg = config(fake.base_url, update_messages(), "gemini-3-flash-preview")
        usages = []
        for _ in range(2):
            session = GeminiSession(cfg)
            usages.append((await session.stream_turn(ignore)).usage)
            await session.close()
    finally:
        await fake.stop()
    contents = fake.requests[0].body["contents"]
    texts = ["".join(p.get("text", "") for p in c["parts"]) for c in contents]
    assert [c["role"] for c in contents] == ["user", "model", "user", "model", "user"]
    assert EDITED in texts[-1]
    assert all(PAGE not in t and EDITED not in t for t in texts[:-1])
    assert usages[0].cache_read_tokens == 0
    assert usages[1].cache_read_tokens == usages[0].input_tokens


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return content if isinstance(content, list) else []


def _count_marks(body: dict[str, Any]) -> int:
    system = body.get("system")
    marks = sum("cache_control" in b for b in system) if isinstance(system, list) else 0
    return marks + sum("cache_control" in block for m in body["messages"] for block in _blocks(m))
