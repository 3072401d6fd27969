"""The values both ends of a tool call speak of: the agent builds them from a model
turn and the worker's response; the worker from its request. One definition each, so
the two sides cannot drift apart field by field."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# gRPC metadata of the agent's tool calls and scores: who they are for (the generation),
# so a worker shares its browser fairly between owners (services/tools/slots.py).
OWNER_METADATA = "s2c-owner"


@dataclass(frozen=True, slots=True)
class FileState:
    """The app's one file, as the tools see and rewrite it."""

    path: str
    content: str


@dataclass(frozen=True, slots=True)
class ImageTag:
    """The page an input screenshot shows (its project path; empty: the entry page) and
    the viewport width it was taken at (0: not said)."""

    path: str = ""
    viewport_width: int = 0


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A complete tool call from a model turn."""

    id: str
    name: str
    arguments: dict[str, Any]
    invalid_json: str | None = None  # raw text when the arguments did not parse


@dataclass(frozen=True, slots=True)
class MediaPart:
    """An image a tool produced, for the model's next turn. Exactly one of `data` and
    `url` is set."""

    display_name: str
    mime_type: str
    data: bytes | None = None
    url: str | None = None


@dataclass(frozen=True, slots=True)
class CapturedImage:
    """A page the worker's browser captured (`CaptureUrl`)."""

    image: bytes
    mime_type: str
    width: int
    height: int
    final_url: str
    truncated: bool
    http_status: int

    @classmethod
    def from_message(cls, message: object) -> CapturedImage:
        """From either service's `CaptureUrlResponse`: both carry these fields by name."""
        return cls(**{name: getattr(message, name) for name in cls.__slots__})

    def fields(self) -> dict[str, Any]:
        """Keyword arguments for either service's `CaptureUrlResponse`."""
        return {name: getattr(self, name) for name in self.__slots__}
