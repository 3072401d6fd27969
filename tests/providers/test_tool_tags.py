"""Tool calls written as `<tool_call>` text, found however the stream cuts them."""

from __future__ import annotations

import json

import pytest

from services.agent.providers.base import ProviderName
from services.agent.providers.openai_chat import _TurnReader
from services.agent.providers.sse import SseEvent
from services.agent.providers.tool_tags import TextCall, ToolTagScanner, parse_call

CALL = {"name": "create_file", "arguments": {"path": "index.html", "content": "<p>a</p>"}}
TEXT = f"Let me build it.\n<tool_call>\n{json.dumps(CALL)}\n</tool_call>\nDone <b>bold</b>."


def scan(text: str, size: int) -> list[str | TextCall]:
    scanner = ToolTagScanner()
    out: list[str | TextCall] = []
    for i in range(0, len(text), size):
        out += scanner.feed(text[i : i + size])
    out += scanner.end()
    merged: list[str | TextCall] = []
    for item in out:  # adjacent prose pieces, as a reader would show them
        if isinstance(item, str) and merged and isinstance(merged[-1], str):
            merged[-1] += item
        else:
            merged.append(item)
    return merged


@pytest.mark.parametrize("size", [1, 2, 5, 11, 12, 13, 1000])
def test_a_tagged_call_becomes_a_call_and_the_tags_leave_the_text(size: int) -> None:
    assert scan(TEXT, size) == [
        "Let me build it.\n",
        TextCall("create_file", json.dumps(CALL["arguments"])),
        "\nDone <b>bold</b>.",
    ]


@pytest.mark.parametrize("size", [1, 4, 1000])
def test_an_unclosed_tag_at_the_end_is_a_call_if_its_body_is_one(size: int) -> None:
    assert scan(f"<tool_call>{json.dumps(CALL)}", size) == [
        TextCall("create_file", json.dumps(CALL["arguments"]))
    ]
    assert scan("<tool_call>{not json", size) == ["<tool_call>{not json"]


def test_a_tag_that_is_no_call_stays_text_as_written() -> None:
    text = "See <tool_call>just words</tool_call> here <tool_"
    assert scan(text, 3) == [text]


def test_arguments_as_json_text_or_as_parameters_are_read_too() -> None:
    as_text = {"name": "edit_file", "arguments": json.dumps({"old_text": "a", "new_text": "b"})}
    assert parse_call(json.dumps(as_text)) == TextCall("edit_file", as_text["arguments"])
    params = {"name": "screenshot_preview", "parameters": {}}
    assert parse_call(json.dumps(params)) == TextCall("screenshot_preview", "{}")
    assert parse_call('{"arguments": {}}') is None


def test_a_turn_keeps_no_more_calls_than_it_may_make_and_counts_the_rest() -> None:
    reader = _TurnReader(ProviderName("Local", "OPENAI_API_KEY"), "", tool_tags=True, max_calls=2)
    tags = f"<tool_call>{json.dumps(CALL)}</tool_call>" * 5
    native = [{"index": i, "id": f"n{i}", "function": {"name": "edit_file"}} for i in range(3)]
    chunks = [{"content": tags}, {"tool_calls": native}, {"tool_calls": native[2:]}]
    reader.feed(
        [SseEvent("", json.dumps({"choices": [{"delta": delta}]}).encode()) for delta in chunks]
    )
    reader.end()
    assert [p.name for p in reader.calls.values()] == ["create_file", "create_file"]
    assert reader.dropped == 3 + 3  # the other tags, and each index of the server's calls
