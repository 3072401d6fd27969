"""Generation events, as the engine produces them (no gRPC here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from services.agent.pricing import Usage

RunStatus = Literal["running", "completed", "failed", "cancelled", "interrupted"]


@dataclass(frozen=True, slots=True)
class VariantCount:
    count: int
    models: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Status:
    text: str


@dataclass(frozen=True, slots=True)
class AssistantText:
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingText:
    text: str


@dataclass(frozen=True, slots=True)
class ToolStarted:
    name: str
    input: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolFinished:
    name: str
    output: dict[str, Any]
    ok: bool


@dataclass(frozen=True, slots=True)
class CodeDelta:
    """The variant's code becomes `code[:offset] + text`."""

    offset: int
    text: str


@dataclass(frozen=True, slots=True)
class CodeSnapshot:
    path: str
    content: str


@dataclass(frozen=True, slots=True)
class TurnUsage:
    usage: Usage
    cost_usd: float


@dataclass(frozen=True, slots=True)
class VariantComplete:
    usage: Usage
    cost_usd: float


@dataclass(frozen=True, slots=True)
class VariantFailed:
    message: str


@dataclass(frozen=True, slots=True)
class GenerationFailed:
    message: str


@dataclass(frozen=True, slots=True)
class GenerationComplete:
    status: RunStatus


Payload = (
    VariantCount
    | Status
    | AssistantText
    | ThinkingText
    | ToolStarted
    | ToolFinished
    | CodeDelta
    | CodeSnapshot
    | TurnUsage
    | VariantComplete
    | VariantFailed
    | GenerationFailed
    | GenerationComplete
)


@dataclass(frozen=True, slots=True)
class Event:
    generation_id: str
    sequence: int  # 1-based, gapless per generation
    variant_index: int
    event_id: str
    payload: Payload
