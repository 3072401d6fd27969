"""Caching by design: what each provider's request carries, asserted on the body the fake
received, and the cached tokens the fakes' emulated caches report back through the SDKs."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from typing import Any

import pytest

from services.agent.domain import FileState, GenerationRequest, HistoryMessage, Prompt
from services.agent.prompts import build_prompt_messages
from services.agent.providers.anthropic import AnthropicSession
from services.agent.providers.base import (
    ExecutedTool,
    PromptMessage,
    ProviderName,
    SessionConfig,
    StreamEvent,
    ToolCall,
    ToolSpec,
)
from services.agent.providers.gemini import GeminiSession
from services.agent.providers.openai_chat import OpenAIChatSession
from services.agent.providers.openai_responses import OpenAIResponsesSession
from services.agent.providers.replay import ELIDE_MIN_CHARS, replay_arguments
from services.agent.providers.streaming import lineage_cache_key
from tests.fakes import anthropic_server as fa
from tests.fakes import gemini_server as fg
from tests.fakes import openai_server as fo

PAGE = "<!DOCTYPE html><html><body>\n" + "<p>a row of the page</p>\n" * 400 + "</body></html>"
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


async def test_gemini_sends_the_base_version_first_and_the_new_part_last() -> None:
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
    # The first version in full, the second as its replacement, the new part last.
    assert PAGE in texts[1]
    assert "<footer>f</footer>" in texts[3]
    assert all(PAGE not in t and EDITED not in t for t in texts[2:])
    assert texts[-1].startswith("Make it blue\n\nThe current source of index.html is version 2")
    assert usages[0].cache_read_tokens == 0
    assert usages[1].cache_read_tokens == usages[0].input_tokens


def test_a_create_and_its_updates_share_the_lineage_key() -> None:
    shot = "data:image/png;base64," + "A" * 400
    create = GenerationRequest("g", prompt=Prompt(images=(shot,)))
    history = (HistoryMessage("user", "", images=(shot,)), HistoryMessage("assistant", PAGE))
    update = replace(
        create,
        generation_type="update",
        history=(*history, HistoryMessage("user", "Make it blue")),
        file_state=FileState("index.html", PAGE),
    )
    created = build_prompt_messages(create, tools={"edit_file"})
    updated = build_prompt_messages(update, tools={"edit_file"})
    assert updated[:2] == created
    assert lineage_cache_key(updated) == lineage_cache_key(created)


# ---- a create_file's content replays as a placeholder, signatures untouched -----------

CONTENT = PAGE + "<!-- " + "x" * ELIDE_MIN_CHARS + " -->"
CREATE_ARGS = {"path": "index.html", "content": CONTENT}


def _replayed(call: ToolCall) -> ExecutedTool:
    result = {"content": "Successfully created file at index.html."}
    return ExecutedTool(call, True, result, replay_arguments=replay_arguments(call, True))


async def _two_turns(session: Any) -> None:
    try:
        turn = await session.stream_turn(ignore)
        session.append_tool_results(turn, [_replayed(turn.tool_calls[0])])
        await session.stream_turn(ignore)
    finally:
        await session.close()


def _elided(args: Any) -> bool:
    parsed = json.loads(args) if isinstance(args, str) else args
    content: str = parsed["content"]
    return parsed["path"] == "index.html" and content.startswith("[content elided: ")


def test_only_a_large_successful_create_file_is_elided() -> None:
    call = ToolCall("c1", "create_file", CREATE_ARGS)
    replay = replay_arguments(call, True)
    assert replay is not None
    assert replay["content"] == (
        f"[content elided: {len(CONTENT):,} characters written to index.html, not repeated "
        "here; index.html holds what this call sent, and edit_file edits it]"
    )
    assert replay_arguments(call, False) is None
    assert (
        replay_arguments(ToolCall("c2", "create_file", {"content": "<p>short</p>"}), True) is None
    )
    assert replay_arguments(ToolCall("c3", "edit_file", CREATE_ARGS), True) is None


async def test_anthropic_replays_the_placeholder_and_the_thinking_signature() -> None:
    fake = fa.FakeAnthropic()
    await fake.start()
    try:
        fake.add_turn(
            fa.Thinking.of("Plan", signature="sig-1"),
            fa.ToolUse.of("t1", "create_file", CREATE_ARGS),
        )
        fake.add_turn(fa.Text.of("Done."))
        await _two_turns(AnthropicSession(config(fake.base_url, update_messages(), "claude")))
    finally:
        await fake.stop()
    assistant = fake.requests[1].body["messages"][-2]["content"]
    assert assistant[0] == {"type": "thinking", "thinking": "Plan", "signature": "sig-1"}
    assert assistant[1]["id"] == "t1"
    assert _elided(assistant[1]["input"])
    assert CONTENT not in json.dumps(fake.requests[1].body)


@pytest.mark.parametrize("route", ["responses", "chat"])
async def test_openai_replays_the_placeholder_and_the_reasoning(route: str) -> None:
    raw = json.dumps(CREATE_ARGS)
    async with fo.FakeOpenAI() as fake:
        if route == "responses":
            items: list[fo.Item] = [
                fo.Reasoning([["Plan"]]),
                fo.FunctionCall("c1", "create_file", raw),
            ]
            fake.add_response(fo.responses_turn(items, response_id="resp_a"))
            fake.add_response(fo.responses_turn([fo.Text(["Done."])]))
            session: Any = OpenAIResponsesSession(config(fake.base_url, update_messages(), "gpt"))
        else:
            usage = fo.TokenUsage()
            fake.add_chat(fo.chat_turn([fo.FunctionCall("c1", "create_file", raw)], usage=usage))
            fake.add_chat(fo.chat_turn([fo.Text(["Done."])], usage=usage))
            session = OpenAIChatSession(config(fake.base_url, update_messages(), "gpt"))
        await _two_turns(session)
    body = fake.requests[1].json
    assert CONTENT not in json.dumps(body)
    if route == "responses":
        kinds = [item.get("type") for item in body["input"]]
        reasoning = body["input"][kinds.index("reasoning")]
        assert reasoning["encrypted_content"] == "enc-resp_a-0"
        call = body["input"][kinds.index("function_call")]
        assert call["call_id"] == "c1"
        assert _elided(call["arguments"])
    else:
        replayed = next(m for m in body["messages"] if m.get("tool_calls"))["tool_calls"][0]
        assert replayed["id"] == "c1"
        assert _elided(replayed["function"]["arguments"])


async def test_gemini_replays_the_placeholder_on_the_signed_part() -> None:
    fake = fg.FakeGemini()
    await fake.start()
    try:
        fake.add_turn(fg.Call("create_file", CREATE_ARGS, signature=b"sig"))
        fake.add_turn(fg.Say("Done."))
        await _two_turns(GeminiSession(config(fake.base_url, update_messages(), "gemini")))
    finally:
        await fake.stop()
    body = fake.requests[1].body
    assert CONTENT not in json.dumps(body)
    part = body["contents"][-2]["parts"][0]
    assert part["thoughtSignature"] == base64.b64encode(b"sig").decode()
    assert _elided(part["functionCall"]["args"])


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return content if isinstance(content, list) else []


def _count_marks(body: dict[str, Any]) -> int:
    system = body.get("system")
    marks = sum("cache_control" in b for b in system) if isinstance(system, list) else 0
    return marks + sum("cache_control" in block for m in body["messages"] for block in _blocks(m))
