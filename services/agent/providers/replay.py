"""What a replayed tool call carries back to the model.

A `create_file` call's content is the whole page: replaying it in every later request
of the variant would bill the page again as input on each turn. The engine decides
(`replay_arguments`) that a successful call's content travels back as a one-line
placeholder; each session swaps it into its own native turn with the one adapter for
its API below, so the rule lives once and the sessions stay one line apart from it.

A call the engine did not answer (one past the calls a turn may make) is not replayed at
all: every API wants an answer for each call it is shown, and a flood of them would grow
every later request.

Which APIs accept a changed call (docs/provider-wire-formats.md, "Prompt caching"):
the signatures that guard reasoning (Anthropic thinking blocks, OpenAI encrypted
reasoning items, Gemini thought signatures) travel unchanged; only the arguments of
the call differ, the same in every later request, so no prefix ever changes after the
model saw it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from services.agent.providers.base import ExecutedTool, ToolCall

# Shorter contents stay: they cost little, and the model keeps seeing what it wrote.
ELIDE_MIN_CHARS = 2_000
DEFAULT_PATH = "index.html"


def replay_arguments(call: ToolCall, ok: bool) -> dict[str, Any] | None:
    """The arguments to replay in place of `call`'s own; None: replay them as called.

    Only a `create_file` that succeeded: its content is then the file the tools hold,
    which a later `edit_file` edits; a failed call stays as sent, for the model to see.
    """
    content = call.arguments.get("content")
    if call.name != "create_file" or not ok or not isinstance(content, str):
        return None
    if len(content) < ELIDE_MIN_CHARS:
        return None
    path = call.arguments.get("path") or DEFAULT_PATH
    note = (
        f"[content elided: {len(content):,} characters written to {path}, not repeated "
        f"here; {path} holds what this call sent, and edit_file edits it]"
    )
    return {**call.arguments, "content": note}


def _by_id(executed: Sequence[ExecutedTool]) -> dict[str, dict[str, Any] | None]:
    """The answered calls by id: their replay arguments (None: as called)."""
    return {e.call.id: e.replay_arguments for e in executed}


def anthropic_blocks(blocks: Sequence[Any], executed: Sequence[ExecutedTool]) -> list[Any]:
    """Anthropic assistant content: `tool_use` blocks get their replay input; those
    not answered are left out."""
    swap = _by_id(executed)
    out: list[Any] = []
    for b in blocks:
        if isinstance(b, dict) and b.get("type") == "tool_use":
            if b.get("id") not in swap:
                continue
            if (replayed := swap[b["id"]]) is not None:
                b = {**b, "input": replayed}
        out.append(b)
    return out


def responses_items(items: Sequence[Any], executed: Sequence[ExecutedTool]) -> list[Any]:
    """OpenAI Responses output items: `function_call` items get their replay arguments;
    those not answered are left out."""
    swap = _by_id(executed)
    out: list[Any] = []
    for i in items:
        if isinstance(i, dict) and i.get("type") == "function_call":
            if i.get("call_id") not in swap:
                continue
            if (replayed := swap[i["call_id"]]) is not None:
                i = {**i, "arguments": json.dumps(replayed)}
        out.append(i)
    return out


def chat_message(message: Mapping[str, Any], executed: Sequence[ExecutedTool]) -> dict[str, Any]:
    """A Chat Completions assistant message: its `tool_calls` get their replay arguments;
    those not answered are left out."""
    swap = _by_id(executed)
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return dict(message)
    replayed = [
        c
        if (arguments := swap[c["id"]]) is None
        else {**c, "function": {**c["function"], "arguments": json.dumps(arguments)}}
        for c in calls
        if c.get("id") in swap
    ]
    return {**message, "tool_calls": replayed}


def gemini_parts(parts: Sequence[Any], executed: Sequence[ExecutedTool]) -> list[Any]:
    """Gemini model parts: a `function_call` part gets its replay args, keeping the
    part's thought signature; parts past the answered calls are left out. Gemini may
    send no call ids, so calls pair with `executed` in order (the engine answers them in
    the order they came, the first ones of the turn)."""
    out: list[Any] = []
    index = 0
    for part in parts:
        call = getattr(part, "function_call", None)
        if call is None:
            out.append(part)
            continue
        if index >= len(executed):
            continue
        done = executed[index]
        index += 1
        if done.replay_arguments is None or done.call.name != call.name:
            out.append(part)
            continue
        new_call = call.model_copy(update={"args": done.replay_arguments})
        out.append(part.model_copy(update={"function_call": new_call}))
    return out
