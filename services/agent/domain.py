"""What a generation is asked and what it records, independent of gRPC and storage."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from services.agent import pricing
from services.agent.events import (
    Accessibility,
    Fidelity,
    RefineRound,
    RunStatus,
    UnrequestedChanges,
)
from services.common.credentials import Credentials
from services.common.tool_types import FileState as FileState

GenerationType = Literal["create", "update"]
InputMode = Literal["image", "video", "text"]
Stack = Literal[
    "html_tailwind",
    "html_css",
    "react_tailwind",
    "bootstrap",
    "vue_tailwind",
    "ionic_tailwind",
    "react_vite",
]


@dataclass(frozen=True, slots=True)
class ImageMeta:
    """What one input image shows (proto `ImageMeta`): both parts optional."""

    viewport_width: int | None = None  # CSS pixels
    page: str = ""  # file stem; empty: the entry page


@dataclass(frozen=True, slots=True)
class Prompt:
    text: str = ""
    full_text: str = ""  # select-and-edit instruction; empty when not used
    images: tuple[str, ...] = ()  # data URLs
    videos: tuple[str, ...] = ()  # data URLs
    image_meta: tuple[ImageMeta, ...] = ()  # aligned with images; may be shorter
    # Select-and-edit's element (its outerHTML): what an update's change check spares.
    selected_element_html: str = ""


@dataclass(frozen=True, slots=True)
class HistoryMessage:
    role: Literal["user", "assistant"]
    text: str
    images: tuple[str, ...] = ()
    videos: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    generation_id: str
    generation_type: GenerationType = "create"
    input_mode: InputMode = "image"
    stack: Stack = "html_tailwind"
    prompt: Prompt = field(default_factory=Prompt)
    history: tuple[HistoryMessage, ...] = ()
    file_state: FileState | None = None  # only when its content is not blank
    files: tuple[FileState, ...] = ()  # an update's whole project; empty: file_state alone
    option_codes: tuple[str, ...] = ()
    asset_extraction_enabled: bool = True
    image_generation_enabled: bool = True
    design_system: str = ""  # stripped; empty for none
    credentials: Credentials = field(default_factory=Credentials)
    models: tuple[str, ...] = ()  # pinned model ids; empty: chosen by available keys
    variant_count: int = 0  # 0: by request kind
    asset_base_url: str = ""
    # The client shows fidelity scores (proto `score_fidelity`): score the variants.
    score_fidelity: bool = False
    # Refinement rounds each variant may take (proto `refine_rounds`); None: the agent's
    # default (S2C_REFINE_ROUNDS), always capped by S2C_REFINE_MAX_ROUNDS.
    refine_rounds: int | None = None
    # Commit streamed code in batches of this many characters (proto `code_batch_chars`,
    # eventlog.py); 0: each delta at once.
    code_batch_chars: int = 0


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One tool call a variant ran (proto `ToolCallRecord`)."""

    id: str
    name: str
    ok: bool
    duration_ms: int


@dataclass(slots=True)
class VariantRecord:
    """A variant as it stands (proto `VariantRecord`): updated in place while its
    generation runs; the run store's copies are taken by `runstore.snapshot`."""

    index: int
    model: str
    status: RunStatus = "running"
    error: str = ""
    code: str = ""
    usage: pricing.Usage = field(default_factory=pricing.Usage)
    cost_usd: float = 0.0
    priced: bool = False  # whether the price table has the model (a 0 cost is unpriced)
    tool_calls: tuple[ToolCallRecord, ...] = ()
    files: tuple[FileState, ...] = ()  # every file written, entry page first
    # The latest score per input image scored (the `fidelity` events).
    fidelity: tuple[Fidelity, ...] = ()
    # The accessibility checks, one per page and width (the `accessibility` events).
    accessibility: tuple[Accessibility, ...] = ()
    # Every scored version of the page while refined (refine.py); empty: not refined.
    refine_rounds: tuple[RefineRound, ...] = ()
    # An update's change checks beyond the selected element (guard.py); empty: none made
    # or nothing changed beyond it.
    unrequested_changes: tuple[UnrequestedChanges, ...] = ()
