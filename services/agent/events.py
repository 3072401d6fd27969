"""Generation events, as the engine produces them (no gRPC here).

One class per member of the proto's `GenerationEvent.payload` oneof, with the same name
and field names, so `convert.py` maps each by rote. Providers stream `AssistantDelta`
and `ThinkingDelta` too: the engine forwards them under the same names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from services.agent import pricing
from services.common.accessibility import A11yReport
from services.common.tool_types import FileState

RunStatus = Literal["running", "completed", "failed", "cancelled", "interrupted"]


@dataclass(frozen=True, slots=True)
class VariantCount:
    count: int
    models: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Status:
    text: str


@dataclass(frozen=True, slots=True)
class TextDelta:
    """The proto's `TextDelta`: text to append to the message `event_id`. Its two oneof
    members are its subclasses, so a match or an equality still tells them apart."""

    text: str


class AssistantDelta(TextDelta):
    __slots__ = ()


class ThinkingDelta(TextDelta):
    __slots__ = ()


@dataclass(frozen=True, slots=True)
class ToolStart:
    name: str
    input: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolResult:
    name: str
    output: dict[str, Any]
    ok: bool


@dataclass(frozen=True, slots=True)
class CodeDelta:
    """The file `path` (empty: the entry page, `index.html`) becomes
    `code[:offset] + text`."""

    offset: int
    text: str
    path: str = ""


class CodeSnapshot(FileState):
    """The variant's whole file after a tool changed it (or when it was last known)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Usage:
    """As an event: one model turn's tokens and that turn's cost. In
    `VariantComplete`: the whole variant's tokens and cost."""

    tokens: pricing.Usage
    cost_usd: float
    priced: bool  # False: the model has no known price, and cost_usd is 0 for that reason


@dataclass(frozen=True, slots=True)
class VariantComplete:
    usage: Usage


@dataclass(frozen=True, slots=True)
class FidelityRegion:
    """A box of the screenshot whose text the page reproduces badly (proto
    `FidelityRegion`); in the screenshot's pixels."""

    x: int
    y: int
    width: int
    height: int
    expected_text: str = ""
    actual_text: str = ""
    issue: str = ""  # missing, text, position or color


@dataclass(frozen=True, slots=True)
class Fidelity:
    """How close a variant's page is to input image `image_index` (docs/eval.md); the
    metrics are None when not computed, and all of them when `unavailable_reason` says
    why not."""

    image_index: int
    viewport_width: int
    block_match: float | None = None
    text: float | None = None
    position: float | None = None
    color: float | None = None
    visual: float | None = None
    unavailable_reason: str = ""
    path: str = ""  # the project file scored; empty: the entry page
    regions: tuple[FidelityRegion, ...] = ()  # worst first; scored with regions only

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fidelity:
        """What `dataclasses.asdict` made of one (the run store's JSON)."""
        regions = tuple(FidelityRegion(**r) for r in data.get("regions", ()))
        return cls(**{**data, "regions": regions})


@dataclass(frozen=True, slots=True)
class RefineRound:
    """One scored version of a variant's page while it is refined (refine.py)."""

    round: int  # 0: the model's first page
    score: float | None  # the mean of the five metrics; None: not scored
    rolled_back: bool = False


@dataclass(frozen=True, slots=True)
class ChangedRegion:
    """A box of an update's new page (CSS pixels at its width) that looks different from
    the previous page, with both versions' text there (guard.py)."""

    x: int
    y: int
    width: int
    height: int
    before_text: str = ""
    after_text: str = ""


@dataclass(frozen=True, slots=True)
class ChangedWidth:
    """An update's change check at one width: what changed beyond the target."""

    viewport_width: int
    regions: tuple[ChangedRegion, ...] = ()
    target: ChangedRegion | None = None  # the selected element, in either version
    unavailable_reason: str = ""


@dataclass(frozen=True, slots=True)
class UnrequestedChanges:
    """What an update's option changed beyond the selected element (guard.py): check 0 on
    its first page, check 1 on the page it ends with."""

    check: int
    widths: tuple[ChangedWidth, ...]
    summary: str = ""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> UnrequestedChanges:
        """What `dataclasses.asdict` made of one (the run store's JSON)."""

        def region(r: dict[str, Any] | None) -> ChangedRegion | None:
            return ChangedRegion(**r) if r else None

        widths = tuple(
            ChangedWidth(
                w["viewport_width"],
                tuple(ChangedRegion(**r) for r in w.get("regions", ())),
                region(w.get("target")),
                w.get("unavailable_reason", ""),
            )
            for w in data.get("widths", ())
        )
        return cls(data["check"], widths, data.get("summary", ""))


# A variant's page checked by axe-core at one width: the tool workers' report, as is.
Accessibility = A11yReport


@dataclass(frozen=True, slots=True)
class Failure:
    """What went wrong, in words the user can act on; never holds a key. The proto's
    `VariantError` (the others go on) and `GenerationError` (all failed) are its
    subclasses."""

    message: str


class VariantError(Failure):
    __slots__ = ()


class GenerationError(Failure):
    __slots__ = ()


@dataclass(frozen=True, slots=True)
class GenerationComplete:
    status: RunStatus


Payload = (
    VariantCount
    | Status
    | AssistantDelta
    | ThinkingDelta
    | ToolStart
    | ToolResult
    | CodeDelta
    | CodeSnapshot
    | Usage
    | VariantComplete
    | Fidelity
    | Accessibility
    | RefineRound
    | UnrequestedChanges
    | VariantError
    | GenerationError
    | GenerationComplete
)


@dataclass(frozen=True, slots=True)
class Event:
    generation_id: str
    sequence: int  # 1-based, gapless per generation
    variant_index: int
    event_id: str
    payload: Payload
