"""Domain types of the tool service: what a tool receives and returns.

No gRPC here: the servicer converts protos to these and back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from services.common.credentials import Credentials
from services.common.input_images import InputImage
from services.common.react_project import ProjectBuild
from services.common.tool_types import FileState as FileState
from services.common.tool_types import ImageTag as ImageTag
from services.common.tool_types import MediaPart as MediaPart
from services.common.tool_types import ToolCall as ToolCall


@dataclass(frozen=True, slots=True)
class ToolFlags:
    image_generation_enabled: bool = True
    asset_extraction_enabled: bool = True
    has_input_images: bool = False


@dataclass(frozen=True, slots=True)
class ToolContext:
    # The request's still images with their tags (what each shows), resolved by hash
    # (image_store.py) only for the tools that read them (worker.py); empty for the rest.
    input_images: tuple[InputImage, ...] = ()
    option_codes: tuple[str, ...] = ()
    flags: ToolFlags = field(default_factory=ToolFlags)
    credentials: Credentials = field(default_factory=Credentials)
    asset_base_url: str = ""
    # Every file of the project (the call's `file` included); empty: `file` alone.
    files: tuple[FileState, ...] = ()
    # Widths the input screenshots were taken at (screenshot_preview captures each).
    viewport_widths: tuple[int, ...] = ()
    max_project_bytes: int = 0  # all files together; 0: the worker's own limit
    owner: str = ""  # whom the call is for (a generation): its share of the browser
    build: ProjectBuild = "none"  # react_vite: the file tools build the project (react.md)


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    ok: bool
    result: dict[str, Any]  # for the model
    summary: dict[str, Any]  # for the browser (toolResult.output)
    updated_file: FileState | None = None
    media: tuple[MediaPart, ...] = ()
    built_file: FileState | None = None  # a built project's page after the call


def failure(result_error: str, summary_error: str, **extra: Any) -> ToolOutcome:
    """The common error shape: `{"error": …}` for the model and a short one for the UI."""
    return ToolOutcome(False, {"error": result_error, **extra}, {"error": summary_error})


# A tool implementation: arguments, the current file (None before create_file), context.
ToolHandler = Callable[[dict[str, Any], FileState | None, ToolContext], Awaitable[ToolOutcome]]
