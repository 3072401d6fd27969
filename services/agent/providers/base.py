"""The one protocol every model provider implements, and the types it speaks.

The engine drives a `ProviderSession` turn by turn and never sees a provider's
native types: a turn's native assistant message travels opaquely inside
`ProviderTurn.native` and only the session that produced it looks inside.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

# The engine forwards these as generation events: one class for each, in events.py.
from services.agent.events import AssistantDelta as AssistantDelta
from services.agent.events import ThinkingDelta as ThinkingDelta
from services.agent.pricing import Price, Usage
from services.common.images import ImageDecoder, ImageLimits
from services.common.input_images import InputImage
from services.common.tool_types import MediaPart as MediaPart
from services.common.tool_types import ToolCall as ToolCall


@dataclass(frozen=True, slots=True)
class PromptMessage:
    """A provider-neutral chat message. Media go before the text, as upstream does."""

    role: Literal["system", "user", "assistant"]
    text: str
    images: tuple[str, ...] = ()  # data URLs (or public URLs)
    videos: tuple[str, ...] = ()  # data URLs


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as offered to the model: canonical name, description, JSON Schema."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ExecutedTool:
    """A tool call and its outcome, to be appended to the conversation."""

    call: ToolCall
    ok: bool
    result: dict[str, Any]
    media: tuple[MediaPart, ...] = ()
    # What the call's arguments replay as in later requests (None: as called);
    # providers/replay.py decides it and swaps it into each API's turn.
    replay_arguments: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of a tool call's raw JSON arguments, in stream order.

    Fragments of one call concatenate to its whole argument text. A provider
    that receives arguments whole (Gemini) sends them as a single fragment.
    """

    call_id: str
    name: str
    arguments_delta: str


# A tool call's argument fragment longer than this counts as arguments that came whole
# (Gemini sends them so): the engine replays such `create_file` content as a live preview
# in steps of at least this many characters (engine.PreviewReplay). So the readers never
# merge the fragments of a streamed call past it (streaming.DeltaMerger), or a burst read
# at once would look whole; JSON escapes only shrink when decoded, so raw text this long
# never decodes to more. One number, for both sides of that rule.
WHOLE_ARGUMENTS_CHARS = 200

StreamEvent = AssistantDelta | ThinkingDelta | ToolCallDelta
OnEvent = Callable[[StreamEvent], Awaitable[None]]


@dataclass(slots=True)
class ProviderTurn:
    """What one model turn produced."""

    assistant_text: str
    tool_calls: list[ToolCall]
    usage: Usage
    native: Any = field(default=None, repr=False)  # opaque to everyone but the session
    # Calls past SessionConfig.max_tool_calls, dropped as they were parsed: neither in
    # `tool_calls` nor in `native`, so they never reach the conversation again.
    dropped_calls: int = 0


class ProviderError(Exception):
    """A provider failure, with a message the user can act on; it never holds a key."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class ToolsRefused(ProviderError):
    """The server answered a request with tools by saying it cannot take tools (the model
    or the server's setup has no tool calling): the request may be made again without
    them, in text mode (docs/models.md). Raised before any output streamed."""


@dataclass(frozen=True, slots=True)
class ProviderName:
    """How texts the user reads name a provider, and where its key comes from."""

    display: str  # e.g. "OpenAI-compatible server"
    key_env: str  # e.g. "OPENAI_API_KEY"


class ProviderSession(Protocol):
    """One variant's conversation with one model."""

    async def stream_turn(self, on_event: OnEvent) -> ProviderTurn:
        """Runs one model turn, forwarding deltas to `on_event` as they arrive."""
        ...

    def append_tool_results(self, turn: ProviderTurn, executed: Sequence[ExecutedTool]) -> None:
        """Appends the turn's assistant message and the tool results to the conversation."""
        ...

    def append_user_turn(self, turn: ProviderTurn, message: PromptMessage) -> None:
        """Appends `turn` (one that called no tool) and then the user's `message`, so the
        model answers it next: the engine's refinement rounds (refine.py)."""
        ...

    def total_cost_usd(self) -> float:
        """Cost of every turn so far, in US dollars."""
        ...

    async def close(self) -> None:
        """Releases the client. Safe to call more than once."""
        ...


@dataclass(frozen=True, slots=True)
class SessionConfig:
    """Everything a provider session needs to start a conversation."""

    provider: ProviderName
    model_id: str  # catalogue id, e.g. "claude-opus-4-8 (medium effort)"
    api_name: str  # name sent to the API, e.g. "claude-opus-4-8"
    effort: str | None  # reasoning effort / thinking level; None: the provider default
    api_key: str
    base_url: str | None
    messages: tuple[PromptMessage, ...]  # messages[0] is the system prompt
    tools: tuple[ToolSpec, ...]
    price: Price | None = None  # the model's (registry.py); None: unpriced
    max_output_tokens: int = 50_000
    # The calls one turn may make (S2C_MAX_TOOL_CALLS_PER_TURN): a session that parses
    # calls out of text keeps no more (ProviderTurn.dropped_calls); the engine runs no more.
    max_tool_calls: int = 16
    # SDK-level retries happen before any byte of the turn streamed, so they never
    # replay output the user already saw.
    max_retries: int = 2
    request_timeout_s: float = 600.0
    # The process's image budget (the session factory passes its one); a session built
    # on its own gets a budget of its own with the default limit.
    images: ImageDecoder = field(default_factory=lambda: ImageDecoder(ImageLimits()))
    api_version: str = ""  # Azure OpenAI's `api-version` query parameter
    # The generation's input images by data URL, parsed once by its plan: a session takes
    # their bytes from here rather than parse the URLs in `messages` again.
    prepared: Mapping[str, InputImage] = field(default_factory=dict)
