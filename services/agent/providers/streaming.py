"""Helpers every provider session uses while it reads a model stream."""

from __future__ import annotations

import json
from dataclasses import dataclass

from services.agent.providers.base import OnEvent, StreamEvent, ToolCall


@dataclass(slots=True)
class TurnProgress:
    """Whether any output of the current turn has reached the user yet: a failure after
    that is a broken stream, not an unreachable server (errors.connection_lost)."""

    streamed: bool = False

    def forward(self, on_event: OnEvent) -> OnEvent:
        """`on_event`, noting that output reached the user."""

        async def emit(event: StreamEvent) -> None:
            self.streamed = True
            await on_event(event)

        return emit


def parse_tool_call(call_id: str, name: str, raw: str) -> ToolCall:
    """A ToolCall judged on its raw argument text; text that is not a JSON object is
    kept raw, so a cut-off file is never passed on as complete."""
    try:
        arguments = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        return ToolCall(call_id, name, {}, invalid_json=raw)
    if not isinstance(arguments, dict):
        return ToolCall(call_id, name, {}, invalid_json=raw)
    return ToolCall(call_id, name, arguments)
