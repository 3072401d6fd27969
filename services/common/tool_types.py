"""The values both ends of a tool call speak of: the agent builds them from a model
turn and the worker's response; the worker from its request. One definition each, so
the two sides cannot drift apart field by field."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class FileState:
    """The app's one file, as the tools see and rewrite it."""

    path: str
    content: str


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


class _CaptureFields(Protocol):
    # The fields the agent's and the tools' `CaptureUrlResponse` messages both have.
    image: bytes
    mime_type: str
    width: int
    height: int
    final_url: str
    truncated: bool
    http_status: int


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
    def from_message(cls, message: _CaptureFields) -> CapturedImage:
        return cls(
            message.image,
            message.mime_type,
            message.width,
            message.height,
            message.final_url,
            message.truncated,
            message.http_status,
        )

    def fields(self) -> dict[str, Any]:
        """Keyword arguments for either service's `CaptureUrlResponse`."""
        return {name: getattr(self, name) for name in self.__slots__}
