"""Tool calls a model writes as text: `<tool_call>{"name": …, "arguments": …}</tool_call>`.

Hermes- and Qwen-style chat templates have the model write its calls so, and a server
that does not parse them (an Ollama model without a tool template, vLLM without a tool
parser, a llama.cpp template it does not recognise) passes them on as assistant text.
`ToolTagScanner` finds them in the streamed text, so the session reports them as the
tool calls they are and the tags never reach the chat or the page (docs/models.md).
A tag whose body is not such a call stays text, as written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

OPEN = "<tool_call>"
CLOSE = "</tool_call>"


@dataclass(frozen=True, slots=True)
class TextCall:
    """A call found in the text: its tool's name and its arguments as JSON text."""

    name: str
    arguments: str


def parse_call(body: str) -> TextCall | None:
    """The call a tag's body spells, or None when it spells none."""
    try:
        value: Any = json.loads(body)
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    name = value.get("name")
    # "arguments" as the templates write it; some models write "parameters".
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):  # already JSON text, as the API's own field is
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return None
    if not isinstance(name, str) or not name or not isinstance(arguments, dict):
        return None
    return TextCall(name, json.dumps(arguments, ensure_ascii=False))


class ToolTagScanner:
    """Feeds on streamed text; yields its prose (str) and the calls (TextCall) in order."""

    __slots__ = ("_body", "_held", "_inside", "_length", "_tail")

    def __init__(self) -> None:
        self._held = ""  # prose that may begin an opening tag
        self._inside = False
        self._body: list[str] = []  # the open tag's body so far
        self._length = 0  # its length
        self._tail = ""  # its last characters, where a closing tag may have begun

    def feed(self, text: str) -> list[str | TextCall]:
        out: list[str | TextCall] = []
        while text:
            text = self._body_step(text, out) if self._inside else self._prose_step(text, out)
        return out

    def end(self) -> list[str | TextCall]:
        """The text ended: an unclosed tag whose body is a call is one; else text."""
        held, self._held = self._held, ""
        if not self._inside:
            return [held] if held else []
        body = "".join(self._body)
        self._inside, self._body, self._length, self._tail = False, [], 0, ""
        call = parse_call(body)
        return [call] if call is not None else [OPEN + body]

    def _prose_step(self, text: str, out: list[str | TextCall]) -> str:
        text = self._held + text
        self._held = ""
        at = text.find(OPEN)
        if at < 0:
            keep = _partial_tag(text)
            if len(text) > keep:
                out.append(text[: len(text) - keep])
            self._held = text[len(text) - keep :]
            return ""
        if at:
            out.append(text[:at])
        self._inside, self._body, self._length, self._tail = True, [], 0, ""
        return text[at + len(OPEN) :]

    def _body_step(self, text: str, out: list[str | TextCall]) -> str:
        # A closing tag may straddle deltas: it is looked for in the body's last few
        # characters and the new text, so each delta is searched once.
        tail = self._tail
        window = tail + text
        at = window.find(CLOSE)
        if at < 0:
            self._body.append(text)
            self._length += len(text)
            self._tail = window[-(len(CLOSE) - 1) :]
            return ""
        body = "".join(self._body) + text
        cut = self._length - len(tail) + at
        self._inside, self._body, self._length, self._tail = False, [], 0, ""
        call = parse_call(body[:cut])
        out.append(call if call is not None else OPEN + body[: cut + len(CLOSE)])
        return body[cut + len(CLOSE) :]


def _partial_tag(text: str) -> int:
    """How many characters at the end of `text` could begin an opening tag."""
    start = text.rfind("<", max(0, len(text) - len(OPEN) + 1))
    if start >= 0 and OPEN.startswith(text[start:]):
        return len(text) - start
    return 0
