"""A provider that replays a script: tests use it, and so does the demo model.

A script is a list of turns; each turn is a list of steps (thinking text,
assistant text, tool calls whose JSON arguments arrive in chunks). It exercises
the same engine path as a real provider: deltas stream, arguments arrive in
pieces, tool results are appended for the next turn.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from services.agent.pricing import Usage
from services.agent.providers.base import (
    AssistantDelta,
    ExecutedTool,
    OnEvent,
    PromptMessage,
    ProviderTurn,
    ThinkingDelta,
    ToolCall,
    ToolCallDelta,
)


@dataclass(frozen=True, slots=True)
class Think:
    chunks: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Say:
    chunks: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CallTool:
    id: str
    name: str
    argument_chunks: tuple[str, ...]  # concatenated, the raw JSON arguments


Step = Think | Say | CallTool


@dataclass(frozen=True, slots=True)
class ScriptedTurn:
    steps: tuple[Step, ...]
    usage: Usage = field(default_factory=Usage)


def chunk_text(text: str, size: int) -> tuple[str, ...]:
    """Splits `text` into pieces of `size` characters (the last may be shorter)."""
    return tuple(text[i : i + size] for i in range(0, len(text), size)) or ("",)


def call_tool(call_id: str, name: str, arguments: dict[str, Any], chunk_size: int = 64) -> CallTool:
    """A tool call whose JSON arguments stream in `chunk_size`-character pieces."""
    return CallTool(call_id, name, chunk_text(json.dumps(arguments), chunk_size))


# A script is either fixed turns, or a function of the tool results so far
# (returns None when the model has nothing more to say).
TurnSource = Callable[[int, Sequence[Sequence[ExecutedTool]]], ScriptedTurn | None]


@dataclass
class ScriptedSession:
    """Replays `script`, pausing `pace_s` between chunks."""

    script: Sequence[ScriptedTurn] | TurnSource
    pace_s: float = 0.0
    tool_results: list[list[ExecutedTool]] = field(default_factory=list)
    user_turns: list[PromptMessage] = field(default_factory=list)  # refinement rounds
    closed: bool = False
    _turn: int = 0
    _usage: Usage = field(default_factory=Usage)

    async def stream_turn(self, on_event: OnEvent) -> ProviderTurn:
        turn = self._next_turn()
        text: list[str] = []
        calls: list[ToolCall] = []
        for step in turn.steps:
            if isinstance(step, Think):
                for chunk in step.chunks:
                    await self._pause()
                    await on_event(ThinkingDelta(chunk))
            elif isinstance(step, Say):
                for chunk in step.chunks:
                    await self._pause()
                    text.append(chunk)
                    await on_event(AssistantDelta(chunk))
            else:
                for chunk in step.argument_chunks:
                    await self._pause()
                    await on_event(ToolCallDelta(step.id, step.name, chunk))
                calls.append(_parse_call(step))
        self._turn += 1
        self._usage = self._usage + turn.usage
        return ProviderTurn("".join(text), calls, turn.usage, native=turn)

    def append_tool_results(self, turn: ProviderTurn, executed: Sequence[ExecutedTool]) -> None:
        self.tool_results.append(list(executed))

    def append_user_turn(self, turn: ProviderTurn, message: PromptMessage) -> None:
        self.user_turns.append(message)

    def total_cost_usd(self) -> float:
        return 0.0

    async def close(self) -> None:
        self.closed = True

    def _next_turn(self) -> ScriptedTurn:
        if callable(self.script):
            turn = self.script(self._turn, self.tool_results)
            return turn if turn is not None else ScriptedTurn(())
        if self._turn < len(self.script):
            return self.script[self._turn]
        return ScriptedTurn(())

    async def _pause(self) -> None:
        if self.pace_s > 0:
            await asyncio.sleep(self.pace_s)


def _parse_call(step: CallTool) -> ToolCall:
    raw = "".join(step.argument_chunks)
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError:
        return ToolCall(step.id, step.name, {}, invalid_json=raw)
    if not isinstance(arguments, dict):
        return ToolCall(step.id, step.name, {}, invalid_json=raw)
    return ToolCall(step.id, step.name, arguments)
